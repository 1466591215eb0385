"""Graph statistics of a bank (``001_*``): what the graph holds and how far a walk spreads.

Counts entries (by kind and status), current edges (by relation and source, with notes),
the degree distribution (median, p99, max, top hubs), the relation breakdown table, and the
reach share at depths 1–4 from a chosen entry: the share of the bank within d hops over
current edges, either direction (the start counts itself, as ``001_*`` counts "11 of 109").
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Count, Q
from django.utils import timezone

from graph.edges.current import current_edge_sql, current_q
from graph.models import Edge
from kb.models import Bank, Entry, EntryStatus
from kb.services.entries import find_entry

REACH_DEPTHS = (1, 2, 3, 4)
HUBS = 10
GONE = (EntryStatus.MERGED, EntryStatus.DELETED)

_CURRENT = current_edge_sql("e", "%(now)s")
_DEGREE_SQL = f"""
SELECT n, count(*) FROM (
    SELECT from_entry_id AS n FROM graph_edge e
     WHERE e.bank_id = %(bank)s AND {_CURRENT}
    UNION ALL
    SELECT to_entry_id FROM graph_edge e
     WHERE e.bank_id = %(bank)s AND {_CURRENT}
) ends GROUP BY n
"""

_NEIGHBOURS_SQL = f"""
SELECT DISTINCT other FROM (
    SELECT e.to_entry_id AS other FROM graph_edge e
     WHERE e.bank_id = %(bank)s AND e.from_entry_id = ANY(%(frontier)s::bigint[])
       AND {_CURRENT}
    UNION ALL
    SELECT e.from_entry_id FROM graph_edge e
     WHERE e.bank_id = %(bank)s AND e.to_entry_id = ANY(%(frontier)s::bigint[])
       AND {_CURRENT}
) n
"""


def nearest_rank(sorted_values: list[int], q: float) -> int:
    """The nearest-rank percentile (the smallest value with at least q of the data at or below)."""
    if not sorted_values:
        return 0
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


@dataclass
class GraphStats:
    """A bank's graph statistics; ``as_json`` is the API shape."""

    entries: dict
    edges: dict
    degree: dict
    hubs: list[dict]
    relations: list[dict]
    reach: dict | None = None
    took_ms: float = 0.0
    extra: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        return {
            "entries": self.entries,
            "edges": self.edges,
            "degree": self.degree,
            "hubs": self.hubs,
            "relations": self.relations,
            "reach": self.reach,
            "took_ms": round(self.took_ms, 1),
        }


def reach_by_depth(bank: Bank, start: Entry, depths=REACH_DEPTHS, total: int | None = None) -> dict:
    """How many entries lie within d hops of ``start`` over current edges (either direction),
    for each d, counting the start: one statement per depth (visited-set expansion)."""
    if total is None:
        total = Entry.objects.filter(bank=bank).exclude(status__in=GONE).count()
    now = timezone.now()
    seen = {start.pk}
    frontier = [start.pk]
    rows = []
    with connection.cursor() as cursor:
        for depth in range(1, max(depths) + 1):
            if frontier:
                cursor.execute(_NEIGHBOURS_SQL, {"bank": bank.pk, "frontier": frontier, "now": now})
                frontier = [pk for (pk,) in cursor.fetchall() if pk not in seen]
                seen.update(frontier)
            if depth in depths:
                rows.append(
                    {
                        "depth": depth,
                        "reached": len(seen),
                        "share": round(len(seen) / total, 4) if total else 0.0,
                    }
                )
    return {"from": {"id": start.short_id, "title": start.title}, "total": total, "depths": rows}


def graph_stats(bank: Bank, reach_from: str | Entry | None = None) -> GraphStats:
    """The bank's graph statistics; with ``reach_from`` (an entry or its id/key) also the
    reach share at depths 1–4 from it. Entries counted are those not merged or deleted."""
    started = time.perf_counter()
    live = Entry.objects.filter(bank=bank).exclude(status__in=GONE)
    by_kind = dict(live.values_list("kind__name").annotate(n=Count("id")).order_by("kind__name"))
    by_status = dict(
        Entry.objects.filter(bank=bank)
        .values_list("status")
        .annotate(n=Count("id"))
        .order_by("status")
    )
    total_entries = sum(by_kind.values())

    current = Edge.objects.filter(bank=bank).filter(current_q())
    per_relation = list(
        current.values("type__name")
        .annotate(n=Count("id"), noted=Count("id", filter=~Q(note="")))
        .order_by("-n", "type__name")
    )
    by_source = dict(current.values_list("source").annotate(n=Count("id")).order_by("source"))
    total_edges = sum(r["n"] for r in per_relation)
    with_note = sum(r["noted"] for r in per_relation)

    with connection.cursor() as cursor:
        cursor.execute(_DEGREE_SQL, {"bank": bank.pk, "now": timezone.now()})
        degree_of = dict(cursor.fetchall())
    live_ids = set(live.values_list("pk", flat=True))
    degrees = sorted(degree_of.get(pk, 0) for pk in live_ids)
    hub_ids = sorted(
        (pk for pk in live_ids if degree_of.get(pk)), key=lambda pk: (-degree_of[pk], pk)
    )[:HUBS]
    hub_entries = live.filter(pk__in=hub_ids).select_related("kind").in_bulk()
    hubs = [
        {
            "id": hub_entries[pk].short_id,
            "title": hub_entries[pk].title,
            "kind": hub_entries[pk].kind.name,
            "degree": degree_of[pk],
        }
        for pk in hub_ids
    ]
    reach = None
    if reach_from is not None:
        start = reach_from if isinstance(reach_from, Entry) else find_entry(bank, reach_from)
        reach = reach_by_depth(bank, start, total=total_entries)

    return GraphStats(
        entries={"total": total_entries, "by_kind": by_kind, "by_status": by_status},
        edges={
            "total": total_edges,
            "by_relation": {r["type__name"]: r["n"] for r in per_relation},
            "by_source": by_source,
            "with_note": with_note,
            "with_note_share": round(with_note / total_edges, 4) if total_edges else 0.0,
        },
        degree={
            "median": statistics.median(degrees) if degrees else 0,
            "p99": nearest_rank(degrees, 0.99),
            "max": degrees[-1] if degrees else 0,
            "mean": round(sum(degrees) / len(degrees), 3) if degrees else 0.0,
            "isolated": sum(1 for d in degrees if d == 0),
        },
        hubs=hubs,
        relations=[
            {
                "relation": r["type__name"],
                "count": r["n"],
                "with_note": r["noted"],
                "share": round(r["n"] / total_edges, 4) if total_edges else 0.0,
            }
            for r in per_relation
        ],
        reach=reach,
        took_ms=(time.perf_counter() - started) * 1000,
    )
