"""REST views of edge extraction (scope ``curate``): queue a run, list and decide proposals.
Thin: parse, call ``graph.ingest.extract.jobs`` or ``graph.curation.edge_proposals``, render."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from graph.api.render import edge_json
from graph.curation import edge_proposals as queue
from graph.ingest.extract.jobs import clean_request, queue_extraction
from graph.models import EdgeProposal
from kb.api import schemas
from kb.api.auth import actor_for, bank_for
from kb.api.openapi import schema_keywords
from kb.api.params import int_param, int_query
from kb.api.render import iso
from kb.api.schemas import NonBlankField
from kb.api.views import ERRORS, BankAPIView
from kb.models import Scope

# --- request/response documentation -----------------------------------------------------------


def _configured_extractors() -> dict:
    """The extractors this server can run (``llm`` only with ``KB_EXTRACT_LLM_URL``)."""
    from django.conf import settings

    names = ["local"] + (["llm"] if settings.KB_EXTRACT_LLM_URL else [])
    return {"extractor": {"type": "string", "enum": names, "default": "local"}}


@schema_keywords(properties=_configured_extractors)
class ExtractionRequestSerializer(serializers.Serializer):
    entries = serializers.ListField(
        child=NonBlankField(),
        allow_null=True,
        required=False,
        help_text="Entry ids to read; null reads everything changed since the last run.",
    )
    extractor = serializers.ChoiceField(choices=["local", "llm"], required=False, default="local")


class EdgeProposalEndSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()


class EdgeProposalSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    source = serializers.CharField(help_text="Entry id the span is quoted from.")
    span = serializers.CharField(help_text="Verbatim text of the source entry.")
    relation = serializers.CharField()
    from_text = serializers.CharField()
    to_text = serializers.CharField()
    confidence = serializers.FloatField()
    extractor = serializers.CharField()
    status = serializers.ChoiceField(choices=["open", "accepted", "rejected"])
    candidates = serializers.JSONField(help_text="Candidates of an unresolved end.")
    edge = serializers.IntegerField(allow_null=True)
    decided_by = serializers.CharField()
    decided_at = serializers.CharField(allow_null=True)
    reason = serializers.CharField()
    created_at = serializers.CharField()

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = EdgeProposalEndSerializer(allow_null=True)
        fields["to"] = EdgeProposalEndSerializer(allow_null=True)
        return fields


class EdgeProposalPageSerializer(serializers.Serializer):
    results = EdgeProposalSerializer(many=True)
    next = serializers.CharField(allow_null=True)


class DecideRequestSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["accept", "reject"])
    reason = serializers.CharField(required=False, allow_blank=True)

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.CharField(required=False, help_text="Names an unresolved end.")
        fields["to"] = serializers.CharField(required=False, help_text="Names an unresolved end.")
        return fields


class DecideResponseSerializer(serializers.Serializer):
    proposal = EdgeProposalSerializer()
    edge = serializers.JSONField(allow_null=True)


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


# --- views --------------------------------------------------------------------------------------


class ExtractionView(BankAPIView):
    @extend_schema(
        request=ExtractionRequestSerializer,
        responses={202: schemas.JobQueuedSerializer, **ERRORS},
        summary="Extract edge proposals from entries' prose (a background job)",
    )
    def post(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.CURATE)
        entries, extractor = clean_request(bank_obj, self.json_body(request))
        with transaction.atomic():
            job = queue_extraction(bank_obj, entries, extractor, actor_for(request))
        return Response({"job": job.public_id}, status=status.HTTP_202_ACCEPTED)


class EdgeProposalListView(BankAPIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "status",
                {"type": "string", "enum": ["", "open", "accepted", "rejected", "all"]},
                description="open (default), accepted, rejected, all",
            ),
            OpenApiParameter("cursor", str, description="The `next` of the previous page."),
            int_query("limit", 50, 1, 200),
        ],
        responses={200: EdgeProposalPageSerializer, **ERRORS},
        summary="The edge proposal queue, most confident first",
    )
    def get(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.CURATE)
        params = request.query_params
        rows, next_cursor = queue.list_edge_proposals(
            bank_obj,
            status=params.get("status", "open"),
            cursor=params.get("cursor"),
            limit=int_param(request, "limit", 50, 1, 200),
        )
        return Response({"results": [proposal_json(p) for p in rows], "next": next_cursor})


class EdgeProposalDecideView(BankAPIView):
    @extend_schema(
        request=DecideRequestSerializer,
        responses={200: DecideResponseSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary="Accept (writes the edge) or reject an edge proposal",
    )
    def post(self, request, bank: str, proposal_id: str):
        bank_obj = bank_for(request, bank, Scope.CURATE)
        body = self.json_body(request)
        result = queue.decide_edge_proposal(
            bank_obj,
            proposal_id,
            body.get("decision"),
            reason=body.get("reason"),
            from_ref=body.get("from"),
            to_ref=body.get("to"),
            actor=actor_for(request),
        )
        proposal = queue.get_proposal(bank_obj, result.proposal.pk)
        return Response(
            {
                "proposal": proposal_json(proposal),
                "edge": edge_json(result.edge) if result.edge else None,
            }
        )
