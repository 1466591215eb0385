"""REST views of graph analytics (PPR search, communities, statistics, fact search, split) and
the staff statistics page. Thin: parse, call a service, render."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404
from django.shortcuts import render
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from graph.actions.curation import SplitEntry
from graph.analytics import communities as community_service
from graph.analytics.stats import graph_stats
from graph.api.schemas import EdgeEndsMixin
from graph.edges.clocks import parse_instant
from graph.retrieval.facts import search_facts
from graph.retrieval.ppr import ppr
from kb.api import schemas
from kb.api.actions import respond
from kb.api.auth import bank_for
from kb.api.params import int_param, int_query, query_text, validated
from kb.api.schemas import InstantField, NonBlankField
from kb.api.views import ERRORS, BankAPIView
from kb.errors import KbError
from kb.models import Bank, Scope

# --- request/response documentation ---------------------------------------------------------


class PPRRequestSerializer(serializers.Serializer):
    query = NonBlankField(help_text="Seeds are this query's best flat matches.")
    limit = serializers.IntegerField(required=False, default=20, min_value=1, max_value=200)
    seeds = serializers.IntegerField(required=False, default=5, min_value=1, max_value=50)
    hops = serializers.IntegerField(required=False, default=2, min_value=1, max_value=4)
    max_nodes = serializers.IntegerField(
        required=False, default=5000, min_value=1, max_value=100_000
    )


class PPRHitSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    kind = serializers.CharField()
    score = serializers.FloatField()
    seed = serializers.BooleanField()


class PPRSeedSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    search_score = serializers.FloatField()


class SubgraphSerializer(serializers.Serializer):
    nodes = serializers.IntegerField()
    edges = serializers.IntegerField()
    truncated = serializers.BooleanField()
    limits_hit = serializers.ListField(child=serializers.CharField())


class PPRResponseSerializer(serializers.Serializer):
    results = PPRHitSerializer(many=True)
    seeds = PPRSeedSerializer(many=True)
    subgraph = SubgraphSerializer()
    took_ms = serializers.FloatField()


class CommunityEntrySerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()


class CommunitySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    label = serializers.CharField()
    size = serializers.IntegerField()
    summary = serializers.CharField()
    terms = serializers.ListField(child=serializers.CharField())
    central = CommunityEntrySerializer(many=True)
    computed_at = serializers.DateTimeField()
    score = serializers.FloatField(required=False, help_text="Only when searching with q.")


class CommunityListSerializer(serializers.Serializer):
    communities = CommunitySerializer(many=True)


class EntryCommunitySerializer(serializers.Serializer):
    entry = CommunityEntrySerializer()
    centrality = serializers.FloatField()
    community = CommunitySerializer()


class StatsSerializer(serializers.Serializer):
    entries = serializers.DictField(help_text='{"total", "by_kind", "by_status"}')
    edges = serializers.DictField(
        help_text='{"total", "by_relation", "by_source", "with_note", "with_note_share"}'
    )
    degree = serializers.DictField(help_text='{"median", "p99", "max", "mean", "isolated"}')
    hubs = serializers.ListField(child=serializers.DictField())
    relations = serializers.ListField(
        child=serializers.DictField(), help_text='[{"relation", "count", "with_note", "share"}]'
    )
    reach = serializers.DictField(
        allow_null=True, help_text='{"from", "total", "depths": [{"depth", "reached", "share"}]}'
    )
    took_ms = serializers.FloatField()


class FactsRequestSerializer(serializers.Serializer):
    query = NonBlankField()
    limit = serializers.IntegerField(required=False, default=10, min_value=1, max_value=100)
    valid_at = InstantField(
        required=False, allow_null=True, help_text="A date or timestamp (default now)."
    )


class FactEdgeSerializer(EdgeEndsMixin, serializers.Serializer):
    id = serializers.IntegerField()
    relation = serializers.CharField()
    label = serializers.CharField(allow_null=True)
    note = serializers.CharField()
    valid_from = serializers.DateTimeField(allow_null=True)
    valid_to = serializers.DateTimeField(allow_null=True)


class FactEndSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    summary = serializers.CharField()


class FactHitSerializer(serializers.Serializer):
    edge = FactEdgeSerializer()
    to = FactEndSerializer()
    score = serializers.FloatField()
    matched_by = serializers.ListField(child=serializers.CharField())

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = FactEndSerializer()
        return fields


class FactsResponseSerializer(serializers.Serializer):
    results = FactHitSerializer(many=True)
    took_ms = serializers.FloatField()


class SplitResultSerializer(serializers.Serializer):
    operation = serializers.IntegerField()
    original = serializers.CharField()
    parts = serializers.ListField(child=serializers.CharField())
    moved = serializers.DictField(child=serializers.IntegerField())


# --- views ------------------------------------------------------------------------------------


class PPRSearchView(BankAPIView):
    @extend_schema(
        request=PPRRequestSerializer,
        responses={200: PPRResponseSerializer, **ERRORS},
        summary="Personalized PageRank search around the query's best matches",
    )
    def post(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        data = validated(PPRRequestSerializer, self.json_body(request))
        result = ppr(
            bank_obj,
            query_text(data),
            seeds=data["seeds"],
            hops=data["hops"],
            max_nodes=data["max_nodes"],
            limit=data["limit"],
        )
        return Response(result.as_json())


class CommunityListView(BankAPIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("q", str, description="Search the summaries (vector + words)."),
            int_query("limit", 20, 1, 200, "At most this many (default 20)."),
        ],
        responses={200: CommunityListSerializer, **ERRORS},
        summary="The bank's communities (largest first), or those matching q",
    )
    def get(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        limit = int_param(request, "limit", 20, 1, 200)
        q = (request.query_params.get("q") or "").strip()
        if q:
            found = community_service.search_communities(bank_obj, q, limit=limit)
        else:
            found = community_service.list_communities(bank_obj, limit=limit)
        return Response({"communities": found})


class EntryCommunityView(BankAPIView):
    @extend_schema(
        responses={200: EntryCommunitySerializer, **ERRORS},
        summary="The community an entry belongs to (404 no_community when none)",
    )
    def get(self, request, bank: str, entry_id: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        return Response(community_service.community_of(bank_obj, entry_id))


class StatsView(BankAPIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("from", str, description="Entry id or key: also measure reach.")
        ],
        responses={200: StatsSerializer, **ERRORS},
        summary="Graph statistics: counts, degrees, hubs, relation breakdown, reach",
    )
    def get(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        start = (request.query_params.get("from") or "").strip() or None
        return Response(graph_stats(bank_obj, reach_from=start).as_json())


class FactSearchView(BankAPIView):
    @extend_schema(
        request=FactsRequestSerializer,
        responses={200: FactsResponseSerializer, **ERRORS},
        summary="Search the facts: current edges by what their notes say",
    )
    def post(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        data = validated(FactsRequestSerializer, self.json_body(request))
        valid_at = parse_instant(data.get("valid_at"), "valid_at")
        hits, took = search_facts(
            bank_obj, query_text(data), limit=data["limit"], valid_at=valid_at
        )
        return Response({"results": [h.as_json() for h in hits], "took_ms": round(took, 1)})


class EntrySplitView(BankAPIView):
    @extend_schema(
        request=SplitEntry.Input,
        responses={201: SplitResultSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary=SplitEntry.summary,
    )
    def post(self, request, bank: str, entry_id: str):
        return respond(SplitEntry, request, bank, entry_id=entry_id)


# --- the staff statistics page ------------------------------------------------------------------

CHART_WIDTH = 640
BAR_HEIGHT = 18
BAR_GAP = 6
LABEL_WIDTH = 190
VALUE_WIDTH = 90


def bar_chart(title: str, items: list[tuple[str, float]], *, fmt: str = "{:,.0f}") -> dict:
    """Geometry of a horizontal bar chart, drawn as inline SVG by the template (no scripts)."""
    top = max((value for _, value in items), default=0) or 1
    span = CHART_WIDTH - LABEL_WIDTH - VALUE_WIDTH
    bars = []
    for i, (label, value) in enumerate(items):
        y = i * (BAR_HEIGHT + BAR_GAP)
        width = max(1.0, span * value / top) if value else 0.0
        bars.append(
            {
                "label": label if len(label) <= 28 else label[:27] + "…",
                "full_label": label,
                "value": fmt.format(value),
                "y": y,
                "text_y": y + BAR_HEIGHT - 5,
                "width": round(width, 1),
                "value_x": round(LABEL_WIDTH + width + 6, 1),
            }
        )
    return {
        "title": title,
        "bars": bars,
        "width": CHART_WIDTH,
        "height": max(BAR_HEIGHT, len(items) * (BAR_HEIGHT + BAR_GAP)),
        "label_width": LABEL_WIDTH,
        "bar_height": BAR_HEIGHT,
    }


@staff_member_required
def stats_page(request, bank: str):
    """Staff page: a bank's graph statistics with server-drawn SVG charts (works offline)."""
    bank_obj = Bank.objects.filter(slug=bank).first()
    if bank_obj is None:
        raise Http404(f"No bank {bank!r}.")
    start = (request.GET.get("from") or "").strip() or None
    error = None
    try:
        stats = graph_stats(bank_obj, reach_from=start)
    except KbError as exc:
        error = exc.message
        stats = graph_stats(bank_obj)
    data = stats.as_json()
    charts = [
        bar_chart(
            "Entries by kind", sorted(data["entries"]["by_kind"].items(), key=lambda kv: -kv[1])
        ),
        bar_chart(
            "Current edges by relation",
            [(r["relation"], r["count"]) for r in data["relations"]],
        ),
        bar_chart(
            "Current edges by source",
            sorted(data["edges"]["by_source"].items(), key=lambda kv: -kv[1]),
        ),
        bar_chart("Top hubs by degree", [(h["title"], h["degree"]) for h in data["hubs"]]),
    ]
    if data["reach"]:
        charts.append(
            bar_chart(
                f"Reach from {data['reach']['from']['title']} (share of the bank)",
                [(f"depth {r['depth']}", r["share"] * 100) for r in data["reach"]["depths"]],
                fmt="{:.1f}%",
            )
        )
    return render(
        request,
        "admin/graph/stats.html",
        {
            **admin.site.each_context(request),
            "title": f"Graph statistics — {bank_obj.name}",
            "bank": bank_obj,
            "stats": data,
            "charts": charts,
            "start": start or "",
            "error": error,
        },
    )
