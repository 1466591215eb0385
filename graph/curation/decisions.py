"""Decisions on merge proposals (API.md "Merge proposals"): the one service behind
``POST .../proposals/{id}/decide`` and the admin's review queue.

- ``approve`` runs :func:`graph.curation.merge.merge_entries` (so it is one ``merge``
  operation, revertible like any merge) and records that operation on the proposal.
- ``reject`` and ``unclear`` change no knowledge, so they open no operation: the proposal
  keeps who decided, when and why (``reasons["decision"]``), and a rejected pair is never
  proposed again (:func:`graph.curation.proposals.propose_merges` skips known pairs).

A proposal already approved or rejected answers ``409 already_decided``; an ``unclear`` one
is still open to a decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from graph.curation.merge import MergeResult, merge_entries
from graph.models import MergeProposal, ProposalStatus
from kb import audit
from kb.errors import Conflict, InvalidInput, NotFound
from kb.inputs import check_known, parse_int_id
from kb.models import Bank, Operation

DECISIONS = {
    "approve": ProposalStatus.APPROVED,
    "reject": ProposalStatus.REJECTED,
    "unclear": ProposalStatus.UNCLEAR,
}
OPEN = (ProposalStatus.PENDING, ProposalStatus.UNCLEAR)
# The API's names of the stored statuses ("open" is a proposal nobody has looked at yet).
API_STATUS = {
    ProposalStatus.PENDING: "open",
    ProposalStatus.APPROVED: "approved",
    ProposalStatus.REJECTED: "rejected",
    ProposalStatus.UNCLEAR: "unclear",
}
STATUS_FROM_API = {name: status for status, name in API_STATUS.items()}


@dataclass
class Decision:
    """A decided proposal, and the merge operation when it was approved."""

    proposal: MergeProposal
    decision: str
    operation: Operation | None = None
    merge: MergeResult | None = None


def get_proposal(bank: Bank, proposal_id: Any) -> MergeProposal:
    pk = parse_int_id(proposal_id, "proposal_id")
    proposal = (
        MergeProposal.objects.filter(bank=bank, pk=pk).select_related("keep", "away").first()
        if pk is not None
        else None
    )
    if proposal is None:
        raise NotFound(
            f"No merge proposal {proposal_id!r} in this bank.", code="proposal_not_found"
        )
    return proposal


def clean_decision(value: Any) -> str:
    if not isinstance(value, str) or value not in DECISIONS:
        raise InvalidInput(
            "decision must be one of approve, reject, unclear.",
            code="invalid_decision",
            fields={"decision": "One of approve, reject, unclear."},
        )
    return value


def decide_proposal(
    bank: Bank,
    proposal_id: Any,
    decision: Any,
    *,
    keep: str | None = None,
    reason: str = "",
    actor: str | None = None,
) -> Decision:
    """Decide one proposal of ``bank``. ``keep`` (approve only) names which of the pair
    survives; by default the proposal's own choice (the better connected, older entry)."""
    decision = clean_decision(decision)
    reason = (reason or "").strip() if isinstance(reason, str) else ""
    actor = actor or audit.current().actor
    with transaction.atomic():
        proposal = get_proposal(bank, proposal_id)
        proposal = MergeProposal.objects.select_for_update().get(pk=proposal.pk)
        if proposal.status not in OPEN:
            raise Conflict(
                f"Proposal {proposal.pk} was already {proposal.status}.", code="already_decided"
            )
        keep_entry, away_entry = proposal.keep, proposal.away
        if keep not in (None, ""):
            if keep not in (keep_entry.short_id, away_entry.short_id):
                raise InvalidInput(
                    "keep must be one of the two entries of the proposal.",
                    code="invalid_decision",
                    fields={"keep": f"One of {keep_entry.short_id}, {away_entry.short_id}."},
                )
            if keep == away_entry.short_id:
                keep_entry, away_entry = away_entry, keep_entry
        result = Decision(proposal, decision)
        if decision == "approve":
            result.merge = merge_entries(
                bank,
                keep_entry.short_id,
                away_entry.short_id,
                reason or f"approved proposal #{proposal.pk}",
                actor=actor,
            )
            result.operation = result.merge.operation
            proposal.operation = result.operation
        proposal.status = DECISIONS[decision]
        proposal.decided_by = actor
        proposal.decided_at = timezone.now()
        proposal.reasons = {
            **(proposal.reasons or {}),
            "decision": {"decision": decision, "reason": reason, "keep": keep_entry.short_id},
        }
        proposal.save(update_fields=["status", "decided_by", "decided_at", "operation", "reasons"])
    return result


def list_proposals(bank: Bank, status: str | None = None):
    """The bank's proposals (best score first), optionally of one API status."""
    qs = MergeProposal.objects.filter(bank=bank).select_related("keep__kind", "away__kind")
    if status not in (None, ""):
        check_known("status", status, STATUS_FROM_API, what="status")
        qs = qs.filter(status=STATUS_FROM_API[status])
    return qs.order_by("-score", "pk")
