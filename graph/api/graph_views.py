"""REST view of graph data for pictures (``GET /api/v1/banks/{bank}/graph``). Thin: parse the
filters, call the service, answer."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from graph.analytics.graph_data import DEFAULT_LIMIT, MAX_LIMIT, graph_data, parse_filters
from graph.analytics.overview import (
    MAX_SEEDS,
    around_view,
    communities_overview,
    community_view,
    parse_ids,
)
from graph.api.analytics_views import CommunityEntrySerializer
from kb.api.auth import bank_for
from kb.api.params import int_query
from kb.api.views import ERRORS, BankAPIView
from kb.inputs import parse_int_id
from kb.models import Scope

# Comma-separated names of at most 64 characters each.
NAME_LIST = {"type": "string", "pattern": "^[^,\\x00]{0,64}(,[^,\\x00]{0,64})*$"}


class GraphNodeSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField()
    degree = serializers.IntegerField()
    community = serializers.IntegerField(allow_null=True)
    x = serializers.FloatField()
    y = serializers.FloatField()
    z = serializers.FloatField()
    x2 = serializers.FloatField(help_text="Position in the 2D layout.")
    y2 = serializers.FloatField(help_text="Position in the 2D layout.")


class GraphLinkSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    relation = serializers.CharField()
    has_note = serializers.BooleanField()
    source = serializers.CharField()

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.CharField()
        fields["to"] = serializers.CharField()
        return fields


class GraphLayoutInfoSerializer(serializers.Serializer):
    status = serializers.ChoiceField(["ready", "computed", "stale", "pending"])
    computed_at = serializers.DateTimeField(allow_null=True)
    clusters = serializers.IntegerField()


class GraphDataSerializer(serializers.Serializer):
    nodes = GraphNodeSerializer(many=True)
    links = GraphLinkSerializer(many=True)
    truncated = serializers.BooleanField()
    layout = GraphLayoutInfoSerializer()


class GraphDataView(BankAPIView):
    """Every drawable entry with kind, status, degree, cluster and cached layout positions (3D
    x/y/z, 2D x2/y2), and the current edges between them. Positions come from a server-side
    layout cached per bank and refreshed by a job after edits."""

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "kinds", NAME_LIST, description="Comma-separated entry kinds to draw."
            ),
            OpenApiParameter(
                "relations", NAME_LIST, description="Comma-separated relations to draw."
            ),
            OpenApiParameter(
                "include_backfill", bool, description="Also draw note-less backfill edges."
            ),
            int_query("limit", DEFAULT_LIMIT, 1, MAX_LIMIT, "At most this many nodes."),
        ],
        responses={200: GraphDataSerializer, **ERRORS},
        summary="Graph data for pictures: nodes with cached layout positions, and links",
    )
    def get(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        return Response(graph_data(bank_obj, parse_filters(request.query_params)))


# --- banks too large to draw whole: the community overview and drill-downs ----------------------

ID_LIST = {
    "type": "string",
    "pattern": f"^[^,\\s\\x00]{{1,64}}(,[^,\\s\\x00]{{1,64}}){{0,{MAX_SEEDS - 1}}}$",
}


class GraphCommunitySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    label = serializers.CharField()
    size = serializers.IntegerField()
    terms = serializers.ListField(child=serializers.CharField())
    central = CommunityEntrySerializer(many=True)
    x = serializers.FloatField()
    y = serializers.FloatField()
    z = serializers.FloatField()
    x2 = serializers.FloatField()
    y2 = serializers.FloatField()


class GraphCommunityLinkSerializer(serializers.Serializer):
    weight = serializers.IntegerField(help_text="Current edges between the two communities.")

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.IntegerField()
        fields["to"] = serializers.IntegerField()
        return fields


class GraphOverviewSerializer(serializers.Serializer):
    level = serializers.ChoiceField(["communities"])
    communities = GraphCommunitySerializer(many=True)
    links = GraphCommunityLinkSerializer(many=True)
    entries = serializers.IntegerField(help_text="Drawable entries of the bank.")
    clustered = serializers.IntegerField(help_text="Entries that belong to a community.")
    total_communities = serializers.IntegerField()
    truncated = serializers.BooleanField(help_text="More communities than drawn (300).")
    status = serializers.ChoiceField(["ready", "missing"])
    computed_at = serializers.DateTimeField(allow_null=True)


class GraphDrillSerializer(GraphDataSerializer):
    level = serializers.ChoiceField(["community", "around"])
    view = serializers.DictField(
        help_text="community: {community: {id, label, size}, shown, total}; around: {seeds, "
        "missing, shown, total}."
    )


DRILL_PARAMS = [
    OpenApiParameter("include_backfill", bool, description="Also draw note-less backfill edges."),
    int_query(
        "limit",
        DEFAULT_LIMIT,
        1,
        MAX_LIMIT,
        "At most this many nodes (and at most KB_EXPLORER_DRILL_MAX).",
    ),
]


class GraphCommunitiesView(BankAPIView):
    """The community overview of a bank too large to draw whole: one node per Louvain community
    (largest first, at most 300) with its size, label and central entries, positioned, and the
    counts of current edges between communities. ``status: missing`` when they were never
    built."""

    @extend_schema(
        responses={200: GraphOverviewSerializer, **ERRORS},
        summary="Graph overview: the bank's communities as nodes with counts",
    )
    def get(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        return Response(communities_overview(bank_obj))


class GraphCommunityView(BankAPIView):
    """One community drawn: its most central members and the current edges among them, laid out
    in the request (same shape as the whole graph, plus ``level`` and ``view``)."""

    @extend_schema(
        parameters=DRILL_PARAMS,
        responses={200: GraphDrillSerializer, **ERRORS},
        summary="Graph drill-down into one community",
        operation_id="banks_graph_community_retrieve",
    )
    def get(self, request, bank: str, community_id: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        number = parse_int_id(community_id, "community_id")
        return Response(community_view(bank_obj, number, parse_filters(request.query_params)))


class GraphAroundView(BankAPIView):
    """Entries (an answer) and up to 12 current neighbours of each, laid out in the request
    (same shape as the whole graph, plus ``level`` and ``view``)."""

    @extend_schema(
        parameters=[
            OpenApiParameter("ids", ID_LIST, required=True, description="Entry ids (1 to 200)."),
            *DRILL_PARAMS,
        ],
        responses={200: GraphDrillSerializer, **ERRORS},
        summary="Graph drill-down around entries: them and their neighbours",
    )
    def get(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        ids = parse_ids(request.query_params)
        return Response(around_view(bank_obj, ids, parse_filters(request.query_params)))
