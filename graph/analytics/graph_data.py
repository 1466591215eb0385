"""Graph data for pictures (``GET /api/v1/banks/{bank}/graph``): every drawable entry with its
kind, status, degree, cluster and cached layout position, and the current edges between them.

Positions are never simulated here. They come from the bank's cached layout
(``graph.analytics.layout_store``); an entry the cache does not know yet is drawn beside a
placed neighbour until the refresh job catches up. Only a bank of at most ``KB_LAYOUT_SYNC_MAX``
entries with no cached layout at all is laid out inside the request.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from graph.analytics import layout_store
from graph.analytics.layout import extent_of, provisional_position
from graph.models import EdgeSource, EdgeType, GraphLayout
from kb.errors import InvalidInput
from kb.inputs import check_known, single_param
from kb.models import Bank, EntryKind
from kb.services.entries import kinds_for_bank

BACKFILL_SOURCES = frozenset(
    {EdgeSource.CITATION_BACKFILL, EdgeSource.METADATA_BACKFILL, EdgeSource.HEADER_PARSE}
)
DEFAULT_LIMIT = 20000
MAX_LIMIT = 100000


@dataclass
class GraphFilters:
    """What to draw: kind and relation allow-lists (None: all), note-less backfill edges
    (hidden unless asked for), and the most nodes to return (best-connected first)."""

    kinds: list[str] | None = None
    relations: list[str] | None = None
    include_backfill: bool = False
    limit: int = DEFAULT_LIMIT


def _names(value, field: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = value.split(",")
    names = [str(v).strip() for v in value if str(v).strip()]
    if not names:
        return None
    if any(len(n) > 64 for n in names):
        raise InvalidInput("Names are at most 64 characters.", fields={field: "too long"})
    return names


def parse_filters(params) -> GraphFilters:
    """Validate query parameters (a QueryDict or a dict) into filters; bad input is a 400. The
    values are what the schema says: ``include_backfill`` true or false, ``limit`` one integer."""
    flag = single_param(params, "include_backfill")
    flag = "false" if flag is None else str(flag).strip().lower()
    if flag not in {"true", "false"}:
        raise InvalidInput(
            "include_backfill is true or false.", fields={"include_backfill": "not a boolean"}
        )
    raw_limit = single_param(params, "limit")
    limit = DEFAULT_LIMIT
    if raw_limit is not None:
        try:
            limit = int(str(raw_limit))
        except ValueError:
            raise InvalidInput(
                "limit is a whole number.", fields={"limit": "not an integer"}
            ) from None
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(
                f"limit is between 1 and {MAX_LIMIT}.", fields={"limit": "out of range"}
            )
    return GraphFilters(
        kinds=_names(params.get("kinds"), "kinds"),
        relations=_names(params.get("relations"), "relations"),
        include_backfill=flag == "true",
        limit=limit,
    )


def _check_vocabulary(bank: Bank, filters: GraphFilters) -> None:
    from django.db.models import Q

    from graph.edges.vocab import edge_types_for_bank

    in_bank = Q(bank__isnull=True) | Q(bank=bank)
    if filters.kinds:
        known = set(
            EntryKind.objects.filter(in_bank, name__in=filters.kinds).values_list("name", flat=True)
        )
        if set(filters.kinds) - known:
            check_known("kinds", filters.kinds, kinds_for_bank(bank), what="kind(s)")
    if filters.relations:
        known = set(
            EdgeType.objects.filter(in_bank, name__in=filters.relations).values_list(
                "name", flat=True
            )
        )
        if set(filters.relations) - known:
            check_known(
                "relations", filters.relations, edge_types_for_bank(bank), what="relation(s)"
            )


def _cached_positions(row: GraphLayout | None) -> tuple[dict, dict, dict]:
    records = layout_store.unpack_positions(row)
    ids = records["id"].tolist()
    xyz = dict(
        zip(
            ids,
            (tuple(p) for p in np.round(records["xyz"].astype(np.float64), 1).tolist()),
            strict=True,
        )
    )
    xy = dict(
        zip(
            ids,
            (tuple(p) for p in np.round(records["xy"].astype(np.float64), 1).tolist()),
            strict=True,
        )
    )
    community = {
        pk: (None if c < 0 else c) for pk, c in zip(ids, records["community"].tolist(), strict=True)
    }
    return xyz, xy, community


def _layout_for(bank: Bank, rows: layout_store.GraphRows) -> tuple[GraphLayout | None, str]:
    """The cached layout row, refreshed or requested as the bank's size allows, and its
    status: ready, computed (just now, in this request), stale or pending."""
    row = GraphLayout.objects.filter(bank=bank).first()
    fingerprint = rows.fingerprint()
    small = len(rows.nodes) <= layout_store.sync_max()
    eager = settings.CELERY_TASK_ALWAYS_EAGER
    if row is None or not row.is_computed:
        if small:
            layout_store.refresh_layout(bank, rows)
            return GraphLayout.objects.get(bank=bank), "computed"
        if not eager:
            layout_store.request_layout(bank.pk)
        return row, "pending"
    if row.fingerprint == fingerprint:
        return row, "ready"
    if small and eager:  # no worker to hand it to: a small bank is cheap to redo here
        layout_store.refresh_layout(bank, rows)
        return GraphLayout.objects.get(bank=bank), "computed"
    if not eager:
        layout_store.request_layout(bank.pk)
    return row, "stale"


def graph_data(bank: Bank, filters: GraphFilters) -> dict:
    """The picture's data as the API returns it (see API.md, "Graph data for pictures")."""
    _check_vocabulary(bank, filters)
    rows = layout_store.read_graph(bank)
    row, status = _layout_for(bank, rows)
    xyz, xy, community = _cached_positions(row)

    degree: Counter = Counter()
    adjacency: dict[int, list[int]] = {}
    for _, a, b, *_ in rows.edges:
        degree[a] += 1
        degree[b] += 1
        adjacency.setdefault(a, []).append(b)
        adjacency.setdefault(b, []).append(a)

    kinds = set(filters.kinds) if filters.kinds else None
    nodes = [n for n in rows.nodes if kinds is None or n[3] in kinds]
    truncated = len(nodes) > filters.limit
    if truncated:
        nodes = sorted(nodes, key=lambda n: (-degree[n[0]], n[0]))[: filters.limit]
        nodes.sort(key=lambda n: n[0])
    short = {n[0]: n[1] for n in nodes}

    unplaced = any(n[0] not in xyz for n in nodes)
    far3, far2 = (extent_of(xyz), extent_of(xy)) if unplaced else (0.0, 0.0)
    out_nodes = []
    for pk, short_id, title, kind, status_ in nodes:
        p3 = xyz.get(pk) or provisional_position(pk, adjacency.get(pk, ()), xyz, 3, far3)
        p2 = xy.get(pk) or provisional_position(pk, adjacency.get(pk, ()), xy, 2, far2)
        out_nodes.append(
            {
                "id": short_id,
                "title": title,
                "kind": kind,
                "status": status_,
                "degree": degree[pk],
                "community": community.get(pk),
                "x": p3[0],
                "y": p3[1],
                "z": p3[2],
                "x2": p2[0],
                "y2": p2[1],
            }
        )

    links = graph_links(rows.edges, short, filters)
    return {
        "nodes": out_nodes,
        "links": links,
        "truncated": truncated,
        "layout": {
            "status": status,
            "computed_at": row.computed_at.isoformat() if row and row.computed_at else None,
            "clusters": row.clusters if row else 0,
        },
    }


def graph_links(edges, short: dict[int, str], filters: GraphFilters) -> list[dict]:
    """The ``links`` of a graph picture: edges ``(pk, from pk, to pk, relation, has_note,
    source)`` between drawn entries (``short`` maps their pks to ids), filtered by relation and
    without bare backfill edges unless asked (one rule for the whole bank and drill-downs)."""
    relations = set(filters.relations) if filters.relations else None
    links = []
    for edge_pk, a, b, relation, has_note, source in edges:
        if a not in short or b not in short:
            continue
        if relations is not None and relation not in relations:
            continue
        if not filters.include_backfill and source in BACKFILL_SOURCES and not has_note:
            continue
        links.append(
            {
                "id": edge_pk,
                "from": short[a],
                "to": short[b],
                "relation": relation,
                "has_note": has_note,
                "source": source,
            }
        )
    return links
