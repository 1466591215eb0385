"""Edge extraction use cases (scope ``curate``): queue an extraction run, list the edge
proposal queue, accept or reject one proposal. The rules stay in
:mod:`graph.ingest.extract.jobs` and :mod:`graph.curation.edge_proposals`."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from graph.actions.fields import CodedAction, CodedChoiceField, CodedErrors
from graph.api.render import edge_json
from graph.curation import edge_proposals as queue
from graph.ingest.extract import EXTRACTORS
from graph.ingest.extract.jobs import queue_extraction
from graph.ingest.extract.run import explicit_entries
from graph.models import EdgeProposal
from kb.actions.base import Action
from kb.api.openapi import schema_keywords
from kb.api.render import iso
from kb.api.schemas import NonBlankField
from kb.errors import InvalidInput
from kb.models import Scope

# --- declarations ---------------------------------------------------------------------------


def _configured_extractors() -> dict:
    """The extractors this server can run (``llm`` only with ``KB_EXTRACT_LLM_URL``)."""
    from django.conf import settings

    names = ["local"] + (["llm"] if settings.KB_EXTRACT_LLM_URL else [])
    return {"extractor": {"type": "string", "enum": names, "default": "local"}}


class EntryIdsField(CodedErrors, serializers.ListField):
    """Entry ids (non-blank strings), or null; else 400 ``invalid_input``. Whether the bank
    has them is :func:`graph.ingest.extract.run.explicit_entries`'s question."""

    def __init__(self, **kwargs):
        super().__init__(
            child=NonBlankField(),
            allow_null=True,
            required=False,
            error_code="invalid_input",
            error_message="{name} must be a list of entry ids, or null for everything changed "
            "since the last run.",
            error_detail="Must be a list of ids or null.",
            **kwargs,
        )

    def to_internal_value(self, data):
        if not isinstance(data, list) or not all(isinstance(e, str) and e.strip() for e in data):
            self.refuse()
        return list(data)


@schema_keywords(properties=_configured_extractors)
class ExtractionRequestSerializer(serializers.Serializer):
    entries = EntryIdsField(
        help_text="Entry ids to read; null reads everything changed since the last run."
    )
    extractor = CodedChoiceField(
        choices=EXTRACTORS,
        required=False,
        default="local",
        error_code="unknown_extractor",
        error_message=f"extractor must be one of: {', '.join(EXTRACTORS)}.",
        error_detail="Unknown extractor.",
    )

    def validate(self, attrs: dict) -> dict:
        from django.conf import settings

        if attrs.get("extractor") == "llm" and not settings.KB_EXTRACT_LLM_URL:
            raise InvalidInput(
                "The llm extractor is not configured (KB_EXTRACT_LLM_URL); use the local one.",
                code="extractor_not_configured",
                fields={"extractor": "Not configured on this server."},
            )
        return attrs


class ExtractEdges(CodedAction):
    """Read entries' prose here and now and queue the relations found as proposals: the run
    itself, for a command that shows its own progress bar (``manage.py extract_edges``). REST
    and MCP queue it as a job with :class:`RunExtraction`. ``progress`` is the runner's."""

    name = "extraction.execute"
    summary = ""  # no REST operation: REST queues (RunExtraction)
    scope = Scope.CURATE
    Input = ExtractionRequestSerializer
    progress = None

    def execute(self):
        from graph.ingest.extract.run import extract_edges

        return extract_edges(
            self.bank,
            entries=self.data.get("entries"),
            extractor=self.data["extractor"],
            progress=self.progress,
        )


class RunExtraction(CodedAction):
    """Queue an extraction run (a background job) over some entries or everything changed
    since the last run. The declaration checks the body (``unknown_extractor``,
    ``extractor_not_configured``); the entries named must be the bank's (``entry_not_found``,
    before anything is queued)."""

    name = "extraction.run"
    summary = "Extract edge proposals from entries' prose (a background job)"
    scope = Scope.CURATE
    Input = ExtractionRequestSerializer
    status = 202

    def execute(self):
        entries = self.data.get("entries")
        if entries is not None:
            explicit_entries(self.bank, entries)  # unknown ids: a 400 now, not a failed job
        with transaction.atomic():
            return queue_extraction(self.bank, entries, self.data["extractor"], self.caller.actor)

    def present(self, job) -> dict:
        return {"job": job.public_id}


class DecideRequestSerializer(serializers.Serializer):
    decision = CodedChoiceField(
        choices=["accept", "reject"],
        error_code="invalid_decision",
        error_message="decision must be 'accept' or 'reject'.",
        help_text="accept writes the edge; reject keeps it from being proposed again.",
    )
    reason = serializers.CharField(required=False, allow_blank=True, help_text="Why.")

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.CharField(required=False, help_text="Names an unresolved end.")
        fields["to"] = serializers.CharField(required=False, help_text="Names an unresolved end.")
        return fields


@extend_schema_field({"type": "string", "enum": ["", "open", "accepted", "rejected", "all"]})
class EdgeProposalStatusField(serializers.CharField):
    """An edge proposal status, checked by
    :func:`graph.curation.edge_proposals.list_edge_proposals` (400 ``invalid_value`` naming the
    statuses, as every unknown filter value answers)."""


class EdgeProposalListQuery(serializers.Serializer):
    status = EdgeProposalStatusField(
        required=False,
        allow_blank=True,
        default="open",
        help_text="open (default), accepted, rejected, all",
    )
    cursor = serializers.CharField(
        required=False, allow_blank=True, help_text="The `next` of the previous page."
    )
    limit = serializers.IntegerField(
        required=False, default=50, min_value=1, max_value=200, help_text="1–200."
    )


# --- rendering ----------------------------------------------------------------------------------


def _end(entry) -> dict | None:
    return {"id": entry.short_id, "title": entry.title} if entry is not None else None


def proposal_json(p: EdgeProposal) -> dict:
    return {
        "id": p.pk,
        "source": p.source_entry.short_id,
        "span": p.span,
        "relation": p.type.name,
        "from": _end(p.from_entry),
        "to": _end(p.to_entry),
        "from_text": p.from_text,
        "to_text": p.to_text,
        "confidence": p.confidence,
        "extractor": p.extractor,
        "status": p.status,
        "candidates": p.candidates,
        "edge": p.edge_id,
        "decided_by": p.decided_by,
        "decided_at": iso(p.decided_at),
        "reason": p.decision_reason,
        "created_at": iso(p.created_at),
    }


# --- actions --------------------------------------------------------------------------------


class ListEdgeProposals(Action):
    """The edge proposal queue, most confident first."""

    name = "edge_proposals.list"
    summary = "The edge proposal queue, most confident first"
    scope = Scope.CURATE
    Query = EdgeProposalListQuery

    def execute(self):
        return queue.list_edge_proposals(
            self.bank,
            status=self.data["status"],
            cursor=self.data.get("cursor"),
            limit=self.data["limit"],
        )

    def present(self, found) -> dict:
        rows, next_cursor = found
        return {"results": [proposal_json(p) for p in rows], "next": next_cursor}


class DecideEdgeProposal(Action):
    """Accept (writes the edge, revertible) or reject an edge proposal."""

    name = "edge_proposals.decide"
    summary = "Accept (writes the edge) or reject an edge proposal"
    scope = Scope.CURATE
    path_ids = {"proposal_id": "proposal_id"}
    Input = DecideRequestSerializer

    def execute(self):
        return queue.decide_edge_proposal(
            self.bank,
            self.ids["proposal_id"],
            self.data["decision"],
            reason=self.data.get("reason"),
            from_ref=self.data.get("from"),
            to_ref=self.data.get("to"),
            actor=self.caller.actor,
        )

    def present(self, result) -> dict:
        return {
            "proposal": proposal_json(queue.get_proposal(self.bank, result.proposal.pk)),
            "edge": edge_json(result.edge) if result.edge else None,
        }


class BandRequestSerializer(serializers.Serializer):
    min_confidence = serializers.FloatField(min_value=0, max_value=1)
    max_confidence = serializers.FloatField(min_value=0, max_value=1, required=False, default=1.0)
    ids = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        allow_null=True,
        help_text="Only these proposals (within the band).",
    )
    reason = serializers.CharField(required=False, allow_blank=True, default="")


class AcceptProposalBand(Action):
    """Accept every open, resolved proposal in a confidence band as ONE revertible operation
    (the curators' bulk accept); a proposal that cannot be accepted is skipped, with why."""

    name = "edge_proposals.accept_band"
    summary = "Accept every open proposal in a confidence band (one revertible operation)"
    scope = Scope.CURATE
    Input = BandRequestSerializer
    values_checked_by_service = True  # accept_band checks the band (0 ≤ min ≤ max ≤ 1)

    def execute(self) -> queue.BulkAccept:
        return queue.accept_band(
            self.bank,
            min_confidence=self.data.get("min_confidence"),
            max_confidence=self.data.get("max_confidence", 1.0),
            ids=self.data.get("ids"),
            reason=self.data.get("reason") or "",
            actor=self.caller.actor,
        )
