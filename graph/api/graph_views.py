"""REST view of graph data for pictures (``GET /api/v1/banks/{bank}/graph``). Thin: parse the
filters, call the service, answer."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from graph.analytics.graph_data import DEFAULT_LIMIT, MAX_LIMIT, graph_data, parse_filters
from graph.analytics.overview import around_view, communities_overview, community_view, parse_level
from kb.api.auth import bank_for
from kb.api.params import int_query
from kb.api.views import ERRORS, BankAPIView
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
            OpenApiParameter(
                "level",
                str,
                enum=["entries", "communities", "community", "around"],
                description=(
                    "entries (default): the whole bank. communities: one node per Louvain "
                    "community with its size, and edge counts between them (a different "
                    "shape: communities, links, entries, status). community (with community="
                    "<id>) and around (with ids=<id,...>): a drill-down, laid out on request, "
                    "in the entries shape plus level and view."
                ),
            ),
            OpenApiParameter("community", int, description="With level=community."),
            OpenApiParameter("ids", NAME_LIST, description="With level=around: entry ids."),
        ],
        responses={200: GraphDataSerializer, **ERRORS},
        summary="Graph data for pictures: nodes with cached layout positions, and links",
    )
    def get(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        params = request.query_params
        view = parse_level(params)
        filters = parse_filters(params)
        if view["level"] == "communities":
            return Response(communities_overview(bank_obj))
        if view["level"] == "community":
            return Response(community_view(bank_obj, view["community"], filters))
        if view["level"] == "around":
            return Response(around_view(bank_obj, view["ids"], filters))
        return Response(graph_data(bank_obj, filters))
