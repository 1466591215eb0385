"""Curation use cases: merge two entries, read and revert an operation, and the merge
proposal queue (list, decide, and its producer: find likely duplicates, in process or queued as a job). The rules (the merge plan, exact reverts, decisions) stay in
:mod:`graph.curation`; these declare the inputs and render the answers."""

from __future__ import annotations

import base64
import json
import re

from django.db import transaction
from django.db.models import Q
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from graph.actions.fields import (
    CodedAction,
    CodedChoiceField,
    CodedErrors,
    ReasonField,
)
from graph.curation import decisions, revert
from graph.curation import merge as curation
from graph.curation.split import KEEP, MAX_PARTS, split_entry
from graph.models import Alias, MergeProposal
from kb.actions.base import Action
from kb.errors import InvalidInput
from kb.models import Entry, Job, Operation, Scope

DEFAULT_PAGE = 50
MAX_PAGE = 200


class MergeRequestSerializer(serializers.Serializer):
    keep = serializers.CharField(help_text="The entry that survives (id or key).")
    away = serializers.CharField(help_text="The entry merged into it (id or key).")
    reason = ReasonField()


class MergeEntries(Action):
    """Merge one entry into another (one ``merge`` operation, exactly revertible)."""

    name = "entries.merge"
    summary = "Merge one entry into another"
    scope = Scope.CURATE
    Input = MergeRequestSerializer
    status = 201

    def execute(self):
        return curation.merge_entries(
            self.bank,
            self.data["keep"],
            self.data["away"],
            self.data["reason"],
            actor=self.caller.actor,
        )

    def present(self, result) -> dict:
        return result.as_json()


class ReadOperation(Action):
    """An operation and the rows it changed."""

    name = "operations.read"
    summary = "An operation and the rows it changed"
    path_ids = {"op_id": "op_id"}

    def execute(self) -> Operation:
        return revert.get_operation(self.bank, self.ids["op_id"])

    def present(self, op: Operation) -> dict:
        return {
            "id": op.pk,
            "kind": op.kind,
            "actor": op.actor,
            "reason": op.reason,
            "time": op.created_at.isoformat(),
            "details": op.details,
            "reverted_by": op.reverted_by_id,
            "changes": revert.operation_changes(op),
        }


class RevertRequestSerializer(serializers.Serializer):
    reason = ReasonField()
    force = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Revert even though later operations changed the same rows.",
    )


class RevertOperation(Action):
    """Undo an operation exactly, as a new ``revert`` operation."""

    name = "operations.revert"
    summary = "Revert an operation exactly"
    scope = Scope.CURATE
    path_ids = {"op_id": "op_id"}
    Input = RevertRequestSerializer

    def execute(self):
        return revert.revert_operation(
            self.bank,
            revert.get_operation(self.bank, self.ids["op_id"]).pk,
            self.data["reason"],
            force=self.data["force"],
            actor=self.caller.actor,
        )

    def present(self, result) -> dict:
        return {"operation": result.operation.pk, "reverted": result.reverted.pk}


def _refuse_split(message: str, fields: dict):
    raise InvalidInput(message, code="invalid_split", fields=fields)


class SplitPartsField(CodedErrors, serializers.ListField):
    """1 to ``MAX_PARTS`` entry payloads (objects; each checked as a new entry of the bank by
    the split service); else 400 ``invalid_split``."""

    def __init__(self, **kwargs):
        super().__init__(
            child=serializers.DictField(),
            min_length=1,
            max_length=MAX_PARTS,
            error_code="invalid_split",
            error_message=f"{{name}} must be a list of 1 to {MAX_PARTS} entry payloads.",
            error_detail="A list of entry payloads.",
            required_message=f"{{name}} must be a list of 1 to {MAX_PARTS} entry payloads.",
            **kwargs,
        )

    def to_internal_value(self, data):
        if not isinstance(data, list) or not 1 <= len(data) <= MAX_PARTS:
            self.refuse()
        bad = {
            f"parts[{i}]": "Must be an object."
            for i, p in enumerate(data)
            if not isinstance(p, dict)
        }
        if bad:
            _refuse_split("Some parts are invalid: " + ", ".join(bad) + ".", bad)
        return list(data)


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {
            "anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "enum": [KEEP]}]
        },
        "propertyNames": {"pattern": "^[1-9][0-9]{0,17}$"},
    }
)
class EdgeAssignmentField(serializers.DictField):
    """``{"<edge id>": <part index> or "keep"}`` → ``{edge id: index or "keep"}``; 400
    ``invalid_split`` naming ``edges.<id>``. Whether the edge is the entry's and the index one
    of the parts is the split service's question (after the entry is found: an unknown entry
    is a 404 whatever the body)."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            _refuse_split(
                'edges must be an object {"<edge id>": <part index> or "keep"}.',
                {"edges": "Must be an object."},
            )
        moves, errors = {}, {}
        for raw_id, target in data.items():
            if not re.fullmatch(r"[1-9][0-9]{0,17}", str(raw_id)):
                errors[f"edges.{raw_id}"] = "Not an edge id."
            elif target != KEEP and (
                not isinstance(target, int) or isinstance(target, bool) or target < 0
            ):
                errors[f"edges.{raw_id}"] = 'Must be a part index or "keep".'
            else:
                moves[int(raw_id)] = target
        if errors:
            _refuse_assignment(errors)
        return moves


def _refuse_assignment(errors: dict):
    _refuse_split("Some edge assignments are invalid: " + ", ".join(sorted(errors)) + ".", errors)


class SplitRequestSerializer(serializers.Serializer):
    parts = SplitPartsField(help_text="Entry payloads, as for POST .../entries.")
    edges = EdgeAssignmentField(
        required=False,
        allow_null=True,
        help_text='{"<edge id>": <part index> or "keep"}; unnamed edges stay on the original.',
    )
    reason = ReasonField()


class SplitEntry(CodedAction):
    """Split an entry into parts: each part gets a ``split_from`` edge to the original and the
    named edges move to their part (one ``split`` operation, exactly revertible). The body's
    shape is checked here (400 ``invalid_split`` / ``reason_required``); each part's fields as
    a new entry of the bank, and the edges named as the entry's, by
    :func:`graph.curation.split.split_entry` (field paths such as ``parts[1].title`` and
    ``edges.<id>`` are the contract)."""

    name = "entries.split"
    summary = "Split an entry into parts (scope curate; one revertible operation)"
    scope = Scope.CURATE
    path_ids = {"id": "entry_id"}
    Input = SplitRequestSerializer
    status = 201

    # The parts' fields are the bank's entry fields, checked by the service: only the
    # body's own fields are named here.

    def execute(self):
        return split_entry(
            self.bank,
            self.ids["id"],
            self.data["parts"],
            edges=self.data.get("edges"),
            reason=self.data["reason"],
            actor=self.caller.actor,
        )

    def present(self, result) -> dict:
        return result.as_json()


# --- merge proposals ----------------------------------------------------------------------------


def _reasons(reasons: dict) -> list[str]:
    """The scoring evidence of a proposal as short sentences."""
    out = []
    if reasons.get("verdict"):
        out.append(str(reasons["verdict"]))
    for key, label in (
        ("cosine", "content cosine"),
        ("name_similarity", "name similarity"),
        ("neighbour_jaccard", "shared-neighbour Jaccard"),
    ):
        if reasons.get(key) is not None:
            out.append(f"{label} {reasons[key]}")
    if reasons.get("shared_tokens"):
        out.append("shared title words: " + ", ".join(reasons["shared_tokens"]))
    if reasons.get("linked_as"):
        out.append("already linked as: " + ", ".join(reasons["linked_as"]))
    return out


def _end(entry: Entry, aliases: dict[int, list[str]]) -> dict:
    return {
        "id": entry.short_id,
        "title": entry.title,
        "kind": entry.kind.name,
        "status": entry.status,
        "aliases": aliases.get(entry.pk, []),
    }


def proposals_json(proposals: list[MergeProposal]) -> list[dict]:
    """Proposals in the API shape; aliases of every end read in one statement."""
    ids = {p.keep_id for p in proposals} | {p.away_id for p in proposals}
    aliases: dict[int, list[str]] = {}
    for entry_id, surface in (
        Alias.objects.filter(entry_id__in=ids)
        .order_by("surface")
        .values_list("entry_id", "surface")
    ):
        aliases.setdefault(entry_id, []).append(surface)
    out = []
    for p in proposals:
        decided = (p.reasons or {}).get("decision") or {}
        out.append(
            {
                "id": p.pk,
                "status": decisions.API_STATUS.get(p.status, p.status),
                "score": p.score,
                "reasons": _reasons(p.reasons or {}),
                "a": _end(p.keep, aliases),
                "b": _end(p.away, aliases),
                "decided_by": p.decided_by or None,
                "decided_at": p.decided_at.isoformat() if p.decided_at else None,
                "decision_reason": decided.get("reason") or None,
                "operation": p.operation_id,
            }
        )
    return out


def _encode(score: float, pk: int) -> str:
    return base64.urlsafe_b64encode(json.dumps([score, pk]).encode()).decode().rstrip("=")


def _decode(cursor: str) -> tuple[float, int]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        score, pk = json.loads(base64.urlsafe_b64decode(padded.encode()))
        return float(score), int(pk)
    except (ValueError, TypeError, json.JSONDecodeError, UnicodeDecodeError):
        raise InvalidInput(
            "cursor is not one this API returned.",
            code="invalid_cursor",
            fields={"cursor": "Invalid."},
        ) from None


@extend_schema_field({"type": "string", "enum": ["", "open", "approved", "rejected", "unclear"]})
class ProposalStatusField(serializers.CharField):
    """A proposal status, checked by :func:`graph.curation.decisions.list_proposals` (400
    ``invalid_value`` naming the statuses, as every unknown filter value answers)."""


class ProposalListQuery(serializers.Serializer):
    status = ProposalStatusField(
        required=False, allow_blank=True, help_text="open, approved, rejected or unclear."
    )
    limit = serializers.IntegerField(
        required=False, default=DEFAULT_PAGE, min_value=1, max_value=MAX_PAGE, help_text="1–200."
    )
    cursor = serializers.CharField(
        required=False, allow_blank=True, help_text="The `next` of the previous page."
    )


class ListMergeProposals(Action):
    """The merge proposal queue, best score first."""

    name = "proposals.list"
    summary = "The merge proposal queue, best score first (scope curate)"
    scope = Scope.CURATE
    Query = ProposalListQuery

    def execute(self) -> tuple[list[MergeProposal], bool]:
        qs = decisions.list_proposals(self.bank, self.data.get("status"))
        if self.data.get("cursor"):
            score, pk = _decode(self.data["cursor"])
            qs = qs.filter(Q(score__lt=score) | Q(score=score, pk__gt=pk))
        limit = self.data["limit"]
        page = list(qs[: limit + 1])
        return page[:limit], len(page) > limit

    def present(self, found) -> dict:
        page, more = found
        return {
            "results": proposals_json(page),
            "next": _encode(page[-1].score, page[-1].pk) if more else None,
        }


class ProposalDecideSerializer(serializers.Serializer):
    decision = CodedChoiceField(
        choices=["approve", "reject", "unclear"],
        error_code="invalid_decision",
        error_message="decision must be one of approve, reject, unclear.",
    )
    keep = serializers.CharField(
        required=False, help_text="Approve only: which entry of the pair survives (default a)."
    )
    reason = serializers.CharField(required=False, allow_blank=True)


class DecideMergeProposal(Action):
    """Approve (merges), reject or mark unclear one merge proposal."""

    name = "proposals.decide"
    summary = "Decide a merge proposal: approve (merges), reject or unclear (scope curate)"
    scope = Scope.CURATE
    path_ids = {"proposal_id": "proposal_id"}
    Input = ProposalDecideSerializer

    def execute(self):
        return decisions.decide_proposal(
            self.bank,
            self.ids["proposal_id"],
            self.data["decision"],
            keep=self.data.get("keep"),
            reason=self.data.get("reason", ""),
            actor=self.caller.actor,
        )

    def present(self, result) -> dict:
        proposal = MergeProposal.objects.select_related("keep__kind", "away__kind").get(
            pk=result.proposal.pk
        )
        return {
            "proposal": proposals_json([proposal])[0],
            "operation": result.operation.pk if result.operation else None,
        }


# --- finding likely duplicates (the proposal queue's producer) ------------------------------


class ProposeMergesInput(serializers.Serializer):
    limit = serializers.IntegerField(
        min_value=1, max_value=10000, default=200, help_text="At most this many new proposals."
    )


class ProposeMerges(Action):
    """Find likely duplicate entries of the bank and queue them as merge proposals (pending
    or unclear; never merges); idempotent. The run's counts. A command runs it in process, the
    task runs it for a queued job; ``progress`` (optional) draws its progress."""

    name = "proposals.find"
    summary = "Find likely duplicates and queue them as merge proposals"
    scope = Scope.CURATE
    Input = ProposeMergesInput
    progress = None

    def execute(self):
        from graph.curation.proposals import propose_merges

        return propose_merges(self.bank, limit=self.data["limit"], progress=self.progress)

    def present(self, run) -> dict:
        return run.as_json()


class QueueMergeProposals(Action):
    """Queue :class:`ProposeMerges` on the bank as a background job (enqueued after commit);
    the job, which the job status pages and ``GET /jobs/{id}`` show."""

    name = "proposals.queue"
    summary = "Queue the duplicate finder as a job"
    scope = Scope.CURATE
    Input = ProposeMergesInput
    status = 202

    def execute(self) -> Job:
        from graph.tasks import propose_merges_task

        job = Job.objects.create(bank=self.bank, kind="merge_proposals", actor=self.caller.actor)
        bank_id, limit = self.bank.pk, self.data["limit"]
        transaction.on_commit(
            lambda: propose_merges_task.delay(bank_id, limit=limit, job_id=job.pk)
        )
        return job

    def present(self, job: Job) -> dict:
        from kb.actions.jobs import job_json

        return job_json(job)
