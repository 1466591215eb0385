"""The review queue of extracted edge proposals: accept, reject, bulk accept by confidence.

Accepting writes the edge through the link service (``graph.edges.links``: the same
validation, locks and duplicate check as any link) with source ``extracted`` and the quoted
span as evidence, as one audited ``link`` operation that the revert service can undo.
Rejecting keeps the decision on the proposal, so the same statement is never raised again.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from graph.edges.links import clean_link, write_edge
from graph.models import Edge, EdgeProposal, EdgeProposalStatus, EdgeSource
from kb import audit
from kb.errors import Conflict, InvalidInput, KbError, NotFound
from kb.inputs import check_known, parse_int_id
from kb.models import Bank, Operation, OperationKind
from kb.unit_of_work import unit_of_work

DECISIONS = ("accept", "reject")
PAGE_DEFAULT, PAGE_MAX = 50, 200


@dataclass
class Decision:
    """A decided proposal, and the edge and operation an accept wrote."""

    proposal: EdgeProposal
    edge: Edge | None = None
    operation: Operation | None = None


@dataclass
class BulkAccept:
    """What a bulk accept did: one operation for every edge it wrote."""

    accepted: list[int] = field(default_factory=list)  # proposal ids
    skipped: list[dict] = field(default_factory=list)  # {"proposal", "code", "message"}
    operation: Operation | None = None

    def as_json(self) -> dict:
        return {
            "accepted": self.accepted,
            "skipped": self.skipped,
            "operation": self.operation.pk if self.operation else None,
        }


def get_proposal(bank: Bank, proposal_id: Any) -> EdgeProposal:
    pk = parse_int_id(proposal_id, "proposal_id")
    proposal = (
        EdgeProposal.objects.filter(bank=bank, pk=pk)
        .select_related("type", "source_entry", "from_entry", "to_entry")
        .first()
        if pk is not None
        else None
    )
    if proposal is None:
        raise NotFound(f"No edge proposal {proposal_id!r} in this bank.", code="proposal_not_found")
    return proposal


def _lock_open(bank: Bank, proposal_id: Any) -> EdgeProposal:
    found = get_proposal(bank, proposal_id)
    proposal = (
        EdgeProposal.objects.select_for_update(of=("self",))
        .select_related("type", "source_entry", "from_entry", "to_entry")
        .get(pk=found.pk)
    )
    if proposal.status != EdgeProposalStatus.OPEN:
        raise Conflict(
            f"Edge proposal {proposal.pk} was already {proposal.status}.", code="already_decided"
        )
    return proposal


def evidence_for(proposal: EdgeProposal) -> dict:
    return {
        "quote": proposal.span,
        "source": proposal.source_entry.short_id,
        "from_text": proposal.from_text,
        "to_text": proposal.to_text,
        "extractor": proposal.extractor,
        "proposal": proposal.pk,
    }


def _accept_locked(bank: Bank, proposal: EdgeProposal, from_ref, to_ref, reason: str) -> Edge:
    """Write the proposal's edge inside the caller's operation and mark it accepted."""
    ends = {}
    for side, ref, known in (
        ("from", from_ref, proposal.from_entry),
        ("to", to_ref, proposal.to_entry),
    ):
        if ref is not None and not (isinstance(ref, str) and ref.strip()):
            raise InvalidInput(
                f"{side} must be an entry id.", code="invalid_input", fields={side: "Invalid."}
            )
        ends[side] = ref.strip() if ref else known
        if ends[side] is None:
            raise InvalidInput(
                f"The {side} end ({getattr(proposal, side + '_text')!r}) did not resolve to one "
                f"entry; name it with {side!r} to accept.",
                code="unresolved_end",
                fields={side: "Required: the surface form did not resolve."},
            )
    source = proposal.source_entry
    if proposal.span not in source.title and proposal.span not in (source.content or ""):
        raise Conflict(
            "The quoted span is no longer in the source entry (it was edited); reject this "
            "proposal and extract again.",
            code="span_gone",
        )
    req = clean_link(
        bank,
        {
            "from": ends["from"],
            "to": ends["to"],
            "relation": proposal.type.name,
            "evidence": evidence_for(proposal),
        },
        source=EdgeSource.EXTRACTED,
    )
    edge = write_edge(bank, req)
    proposal.status = EdgeProposalStatus.ACCEPTED
    proposal.edge = edge
    proposal.operation_id = audit.current().operation_id
    proposal.decided_by = audit.current().actor
    proposal.decided_at = timezone.now()
    proposal.decision_reason = reason
    proposal.save(
        update_fields=[
            "status", "edge", "operation", "decided_by", "decided_at", "decision_reason",
        ]
    )  # fmt: skip
    return edge


def decide_edge_proposal(
    bank: Bank,
    proposal_id: Any,
    decision: Any,
    *,
    reason: Any = "",
    from_ref: Any = None,
    to_ref: Any = None,
    actor: str | None = None,
) -> Decision:
    """Accept (write the edge, one ``link`` operation) or reject (kept; never raised again)."""
    if decision not in DECISIONS:
        raise InvalidInput(
            "decision must be 'accept' or 'reject'.",
            code="invalid_decision",
            fields={"decision": "Must be accept or reject."},
        )
    if reason is not None and not isinstance(reason, str):
        raise InvalidInput("reason must be text.", code="invalid_input", fields={"reason": "Text."})
    reason = (reason or "").strip()
    if decision == "reject":
        with transaction.atomic():
            proposal = _lock_open(bank, proposal_id)
            proposal.status = EdgeProposalStatus.REJECTED
            proposal.decided_by = actor or audit.current().actor
            proposal.decided_at = timezone.now()
            proposal.decision_reason = reason
            proposal.save(update_fields=["status", "decided_by", "decided_at", "decision_reason"])
        return Decision(proposal)
    get_proposal(bank, proposal_id)  # 404 before opening an operation
    with unit_of_work(
        bank,
        OperationKind.LINK,
        reason=reason or f"accepted edge proposal #{proposal_id}",
        actor=actor,
        edge_proposal=int(proposal_id),
    ) as op:
        proposal = _lock_open(bank, proposal_id)
        edge = _accept_locked(bank, proposal, from_ref, to_ref, reason)
        audit.record(op, edges=[edge.pk])
    return Decision(proposal, edge, op)


def band_proposals(
    bank: Bank, lo: float, hi: float, ids: list[int] | None = None
) -> QuerySet[EdgeProposal]:
    """What :func:`accept_band` would accept (open, both ends resolved, confidence in
    [``lo``, ``hi``], optionally only ``ids``): the admin previews exactly this set."""
    qs = EdgeProposal.objects.filter(
        bank=bank,
        status=EdgeProposalStatus.OPEN,
        confidence__gte=lo,
        confidence__lte=hi,
        from_entry__isnull=False,
        to_entry__isnull=False,
    )
    return qs.filter(pk__in=ids) if ids is not None else qs


def accept_band(
    bank: Bank,
    *,
    min_confidence: float,
    max_confidence: float = 1.0,
    ids: list[int] | None = None,
    reason: str = "",
    actor: str | None = None,
) -> BulkAccept:
    """Accept every open, fully resolved proposal whose confidence lies in
    [``min_confidence``, ``max_confidence``] (optionally only ``ids``), as ONE revertible
    operation. A proposal that cannot be accepted (its edge now exists, its span is gone)
    is skipped with the reason and stays open."""
    try:
        lo, hi = float(min_confidence), float(max_confidence)
    except (TypeError, ValueError):
        raise InvalidInput(
            "The confidence band needs two numbers.", code="invalid_input",
            fields={"min_confidence": "A number from 0 to 1."},
        ) from None  # fmt: skip
    if not (0.0 <= lo <= hi <= 1.0):
        raise InvalidInput(
            "The band must satisfy 0 ≤ min_confidence ≤ max_confidence ≤ 1.",
            code="invalid_input",
            fields={"min_confidence": "Out of range."},
        )
    qs = band_proposals(bank, lo, hi, ids)
    result = BulkAccept()
    pks = list(qs.order_by("-confidence", "pk").values_list("pk", flat=True))
    if not pks:
        return result
    with unit_of_work(
        bank,
        OperationKind.LINK,
        reason=reason or f"bulk accept of edge proposals, confidence {lo:.2f}–{hi:.2f}",
        actor=actor,
        edge_proposals_band=[lo, hi],
    ) as op:
        edges = []
        for pk in pks:
            try:
                with transaction.atomic():  # a savepoint: a skipped proposal writes nothing
                    proposal = _lock_open(bank, pk)
                    edges.append(_accept_locked(bank, proposal, None, None, reason).pk)
                result.accepted.append(pk)
            except KbError as exc:
                result.skipped.append({"proposal": pk, "code": exc.code, "message": exc.message})
        audit.record(op, edges=edges, accepted=result.accepted)
        result.operation = op
    return result


# --- listing with a cursor ---------------------------------------------------------------------


def _encode(confidence: float, pk: int) -> str:
    return base64.urlsafe_b64encode(f"{confidence!r}:{pk}".encode()).decode().rstrip("=")


def _decode(cursor: str) -> tuple[float, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        confidence, pk = raw.split(":")
        return float(confidence), int(pk)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidInput(
            "The cursor is not one this API gave out.",
            code="invalid_cursor",
            fields={"cursor": "Invalid."},
        ) from None


def list_edge_proposals(
    bank: Bank, *, status: str | None = "open", cursor: str | None = None, limit: Any = None
) -> tuple[list[EdgeProposal], str | None]:
    """One page of proposals, most confident first, and the cursor of the next page."""
    if status not in (None, ""):
        check_known("status", status, [*EdgeProposalStatus.values, "all"], what="status")
    try:
        limit = PAGE_DEFAULT if limit in (None, "") else int(limit)
    except (TypeError, ValueError):
        limit = -1
    if not 1 <= limit <= PAGE_MAX:
        raise InvalidInput(
            f"limit must be between 1 and {PAGE_MAX}.",
            code="invalid_input",
            fields={"limit": "Out of range."},
        )
    qs: QuerySet = EdgeProposal.objects.filter(bank=bank).select_related(
        "type", "source_entry", "from_entry", "to_entry"
    )
    if status not in (None, "", "all"):
        qs = qs.filter(status=status)
    if cursor:
        confidence, pk = _decode(cursor)
        qs = qs.filter(Q(confidence__lt=confidence) | Q(confidence=confidence, pk__gt=pk))
    rows = list(qs.order_by("-confidence", "pk")[: limit + 1])
    next_cursor = (
        _encode(rows[limit - 1].confidence, rows[limit - 1].pk) if len(rows) > limit else None
    )
    return rows[:limit], next_cursor
