"""Views of a bank too large to draw whole (``GET /api/v1/banks/{bank}/graph/...``).

- ``graph/communities``: the bank's Louvain communities (``graph.analytics.communities``) as
  one node each, with its size, label and most central members, and the edge counts between
  communities; laid out in the request (a spring layout of at most ``OVERVIEW_MAX`` balls).
- ``graph/communities/<id>``: one community's members (the most central first, at
  most ``limit``) and the current edges among them, laid out in the request.
- ``graph/around?ids=<id,...>``: the given entries (a query's answer) and up to
  ``PER_SEED`` current neighbours of each, laid out in the request.

Drill-downs answer the same shape as ``graph`` (``nodes``, ``links``,
``truncated``, ``layout``), so a client draws them the same way; none of them waits for the
bank's cached layout, which for a very large bank may not exist yet.
"""

from __future__ import annotations

from collections import Counter
from itertools import groupby

from django.conf import settings
from django.db import connection
from django.db.models import Count, F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from graph.analytics.graph_data import GraphFilters, graph_links
from graph.analytics.layout import arrange_groups, compute_layout
from graph.analytics.layout_store import HIDDEN_STATUSES
from graph.analytics.view_cache import community_key, community_layout, overview_parts
from graph.edges.links import current_q
from graph.models import Community, CommunityMembership, Edge
from kb.errors import InvalidInput, NotFound
from kb.inputs import single_param
from kb.models import Bank, Entry

OVERVIEW_MAX = 300  # communities drawn in the overview (largest first)
PER_SEED = 12  # neighbours drawn around each entry of an answer
MAX_SEEDS = 200


def drill_max() -> int:
    """Most entries a drill-down draws (it is laid out inside the request)."""
    return settings.KB_EXPLORER_DRILL_MAX


def overview_min() -> int:
    """Banks with more drawable entries than this open on the community overview."""
    return settings.KB_EXPLORER_OVERVIEW_MIN


def parse_ids(params) -> list[str]:
    """``ids=<id,...>``: 1 to ``MAX_SEEDS`` entry ids; anything else is a 400 naming the field."""
    raw = str(single_param(params, "ids") or "")
    ids = list(dict.fromkeys(i.strip() for i in raw.split(",") if i.strip()))
    if not ids or len(ids) > MAX_SEEDS or any(len(i) > 64 for i in ids):
        raise InvalidInput(
            f"ids is a comma-separated list of 1 to {MAX_SEEDS} entry ids.",
            fields={"ids": "missing or too many"},
        )
    return ids


def drawable_count(bank: Bank) -> int:
    return Entry.objects.filter(bank=bank).exclude(status__in=HIDDEN_STATUSES).count()


# --- the overview -------------------------------------------------------------------------------


def _community_pairs(bank: Bank, ids: list[int]) -> Counter:
    """Current edges between communities, counted per unordered pair (one statement)."""
    edges = (
        Edge.objects.filter(bank=bank).filter(current_q()).values("from_entry_id", "to_entry_id")
    )
    inner, params = edges.query.sql_with_params()
    table = CommunityMembership._meta.db_table
    sql = (
        f"SELECT LEAST(ma.community_id, mb.community_id), "
        f"GREATEST(ma.community_id, mb.community_id), COUNT(*) FROM ({inner}) e "
        f"JOIN {table} ma ON ma.entry_id = e.from_entry_id "
        f"JOIN {table} mb ON mb.entry_id = e.to_entry_id "
        "WHERE ma.community_id <> mb.community_id AND ma.bank_id = %s "
        "AND ma.community_id = ANY(%s) AND mb.community_id = ANY(%s) GROUP BY 1, 2"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, bank.pk, ids, ids])
        return Counter({(a, b): n for a, b, n in cursor.fetchall()})


def _arrange(shown: list[Community], pairs: Counter):
    """3D and 2D centres of the communities, one ball each, joined by their edge counts."""
    index = {c.pk: i for i, c in enumerate(shown)}
    indexed = {(index[a], index[b]): n for (a, b), n in pairs.items()}
    sizes = [c.size for c in shown]
    return arrange_groups(sizes, indexed, 3), arrange_groups(sizes, indexed, 2)


def communities_overview(bank: Bank) -> dict:
    """The community overview: one node per community (largest first), positioned."""
    from graph.analytics.communities import central_entries, central_refs

    total = drawable_count(bank)
    rows = list(Community.objects.filter(bank=bank).order_by("-size", "id")[: OVERVIEW_MAX + 1])
    shown = rows[:OVERVIEW_MAX]
    all_count = (
        Community.objects.filter(bank=bank).count() if len(rows) > OVERVIEW_MAX else len(rows)
    )
    clustered = CommunityMembership.objects.filter(bank=bank).count()
    ids = [c.pk for c in shown]
    pairs, xyz, xy = overview_parts(
        bank,
        shown,
        lambda: _community_pairs(bank, ids) if ids else Counter(),
        lambda pairs: _arrange(shown, pairs),
    )
    central = central_entries(shown)
    nodes = [
        {
            "id": c.pk,
            "label": c.label,
            "size": c.size,
            "terms": list(c.terms),
            "central": central_refs(c, central),
            "x": float(xyz[i][0]),
            "y": float(xyz[i][1]),
            "z": float(xyz[i][2]),
            "x2": float(xy[i][0]),
            "y2": float(xy[i][1]),
        }
        for i, c in enumerate(shown)
    ]
    links = [{"from": a, "to": b, "weight": n} for (a, b), n in sorted(pairs.items())]
    computed = max((c.computed_at for c in shown), default=None)
    return {
        "level": "communities",
        "communities": nodes,
        "links": links,
        "entries": total,
        "clustered": clustered,
        "total_communities": all_count,
        "truncated": all_count > len(shown),
        "status": "ready" if shown else "missing",
        "computed_at": computed.isoformat() if computed else None,
    }


# --- drill-downs --------------------------------------------------------------------------------


def _degrees(bank: Bank, pks: list[int]) -> Counter:
    """Every current edge of each entry (filters do not change a degree), two statements."""
    degree: Counter = Counter()
    current = Edge.objects.filter(bank=bank).filter(current_q())
    for field in ("from_entry_id", "to_entry_id"):
        rows = current.filter(**{f"{field}__in": pks}).values(field).annotate(n=Count("id"))
        for row in rows.order_by():
            degree[row[field]] += row["n"]
    return degree


def _subgraph(
    bank: Bank,
    pks: list[int],
    filters: GraphFilters,
    truncated: bool,
    extra: dict,
    community: Community | None = None,
):
    """Nodes ``pks`` and the current edges among them, laid out now (or, for a
    ``community``'s drill-down, read from its cached layout when the nodes and edges are the
    same: ``layout.status`` ``ready``); the entries level's shape plus ``level`` and
    ``view``."""
    entries = list(
        Entry.objects.filter(bank=bank, pk__in=pks)
        .exclude(status__in=HIDDEN_STATUSES)
        .order_by("pk")
        .values_list("pk", "short_id", "title", "kind__name", "status")
    )
    if filters.kinds:
        entries = [e for e in entries if e[3] in set(filters.kinds)]
    short = {e[0]: e[1] for e in entries}
    edges = list(
        Edge.objects.filter(bank=bank, from_entry_id__in=list(short), to_entry_id__in=list(short))
        .filter(current_q())
        .order_by("pk")
        .values_list("pk", "from_entry_id", "to_entry_id", "type__name", "note", "source")
    )
    pairs = [(e[1], e[2]) for e in edges]
    layout_status, computed_at = "computed", timezone.now()
    if community is None:
        layout = compute_layout(list(short), pairs)
    else:
        key = community_key(community.pk, len(pks), filters.kinds)
        layout, row = community_layout(bank, key, community, list(short), pairs)
        layout_status = "computed" if row is None else "ready"
        computed_at = row or computed_at
    degree = _degrees(bank, list(short))
    nodes = []
    for pk, short_id, title, kind, status in entries:
        p3, p2 = layout.xyz[pk], layout.xy[pk]
        nodes.append(
            {
                "id": short_id,
                "title": title,
                "kind": kind,
                "status": status,
                "degree": degree[pk],
                "community": layout.community.get(pk),
                "x": p3[0],
                "y": p3[1],
                "z": p3[2],
                "x2": p2[0],
                "y2": p2[1],
            }
        )
    noted = (
        (edge_pk, a, b, relation, bool(note and note.strip()), source)
        for edge_pk, a, b, relation, note, source in edges
    )
    links = graph_links(noted, short, filters)
    return {
        "nodes": nodes,
        "links": links,
        "truncated": truncated,
        "layout": {
            "status": layout_status,
            "computed_at": computed_at.isoformat(),
            "clusters": layout.clusters,
        },
        **extra,
    }


def community_view(bank: Bank, community_id: int, filters: GraphFilters) -> dict:
    """One community's most central members (at most ``limit`` and ``drill_max``)."""
    community = Community.objects.filter(bank=bank, pk=community_id).first()
    if community is None:
        raise NotFound(
            f"No community {community_id} in this bank (communities are rebuilt whole: reload "
            "the overview).",
            code="community_not_found",
        )
    cap = min(filters.limit, drill_max())
    members = CommunityMembership.objects.filter(bank=bank, community=community)
    pks = list(
        members.order_by("-centrality", "entry_id").values_list("entry_id", flat=True)[: cap + 1]
    )
    truncated = len(pks) > cap
    view = {
        "community": {"id": community.pk, "label": community.label, "size": community.size},
        "shown": min(len(pks), cap),
        "total": community.size,
    }
    extra = {"level": "community", "view": view}
    return _subgraph(bank, pks[:cap], filters, truncated, extra, community=community)


def _neighbours(bank: Bank, seeds: list[int]) -> list[int]:
    """Up to ``PER_SEED`` current neighbours of each seed (noted edges first), in seed order."""
    visible = Edge.objects.filter(bank=bank).filter(current_q())
    picked: list[tuple[int, int]] = []
    for here, there in (("from_entry_id", "to_entry"), ("to_entry_id", "from_entry")):
        rows = (
            visible.filter(**{f"{here}__in": seeds})
            .exclude(**{f"{there}__status__in": HIDDEN_STATUSES})
            .annotate(
                rank=Window(
                    RowNumber(),
                    partition_by=[F(here)],
                    order_by=[F("note").desc(nulls_last=True), F("pk").asc()],
                )
            )
            .filter(rank__lte=PER_SEED)
            .values_list(here, f"{there}_id")
        )
        picked.extend(rows)
    order = {pk: i for i, pk in enumerate(seeds)}
    pairs = sorted(picked, key=lambda p: order[p[0]])
    out: list[int] = []
    for _, group in groupby(pairs, key=lambda p: p[0]):
        out.extend(other for _, other in list(group)[:PER_SEED])
    return out


def around_view(bank: Bank, ids: list[str], filters: GraphFilters) -> dict:
    """The given entries (an answer) and their nearest neighbours."""
    found = dict(
        Entry.objects.filter(bank=bank, short_id__in=ids)
        .exclude(status__in=HIDDEN_STATUSES)
        .values_list("short_id", "pk")
    )
    if not found:
        raise NotFound("None of these entries is in this bank.", code="entry_not_found")
    seeds = [found[i] for i in ids if i in found]
    cap = min(filters.limit, drill_max())
    chosen = list(dict.fromkeys(seeds + _neighbours(bank, seeds)))
    truncated = len(chosen) > cap
    view = {
        "seeds": [i for i in ids if i in found],
        "missing": [i for i in ids if i not in found],
        "shown": min(len(chosen), cap),
        "total": len(chosen),
    }
    return _subgraph(bank, chosen[:cap], filters, truncated, {"level": "around", "view": view})
