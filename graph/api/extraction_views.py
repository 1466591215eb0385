"""REST views of edge extraction (scope ``curate``): queue a run, list and decide proposals.
Each view runs one action of :mod:`graph.actions.extraction`."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from graph.actions.extraction import (
    DecideEdgeProposal,
    ListEdgeProposals,
    RunExtraction,
)
from kb.api import schemas
from kb.api.actions import respond
from kb.api.views import ERRORS, BankAPIView

# --- response documentation -----------------------------------------------------------


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


class DecideResponseSerializer(serializers.Serializer):
    proposal = EdgeProposalSerializer()
    edge = serializers.JSONField(allow_null=True)


# --- views --------------------------------------------------------------------------------------


class ExtractionView(BankAPIView):
    @extend_schema(
        request=RunExtraction.Input,
        responses={202: schemas.JobQueuedSerializer, **ERRORS},
        summary=RunExtraction.summary,
    )
    def post(self, request, bank: str):
        return respond(RunExtraction, request, bank)


class EdgeProposalListView(BankAPIView):
    @extend_schema(
        parameters=[ListEdgeProposals.Query],
        responses={200: EdgeProposalPageSerializer, **ERRORS},
        summary=ListEdgeProposals.summary,
    )
    def get(self, request, bank: str):
        return respond(ListEdgeProposals, request, bank)


class EdgeProposalDecideView(BankAPIView):
    @extend_schema(
        request=DecideEdgeProposal.Input,
        responses={200: DecideResponseSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary=DecideEdgeProposal.summary,
    )
    def post(self, request, bank: str, proposal_id: str):
        return respond(DecideEdgeProposal, request, bank, proposal_id=proposal_id)
