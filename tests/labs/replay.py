"""fold_replay (``000_*`` "Production"): replay logged queries with the fold on and off and
measure what folding did — pointers, entries gained, entries lost (must be none), note
coverage and the fold's latency overhead."""

from __future__ import annotations

import datetime as dt
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import connection
from django.utils import timezone

from graph.models import QueryLog
from graph.retrieval.query import QueryParams, run_query
from kb.models import Bank
from kb.services.embedding import embed_query


@dataclass
class ReplayReport:
    queries: int = 0
    with_folded_pointer: int = 0
    with_any_pointer: int = 0
    gained: list[int] = field(default_factory=list)
    lost: list[tuple[str, list[str]]] = field(default_factory=list)
    pointers: int = 0
    pointers_with_note: int = 0
    overhead_ms: list[float] = field(default_factory=list)
    results_seen: int = 0
    results_under_pressure: int = 0  # more noted edges than neighbour slots
    queries_under_pressure: int = 0

    def summary(self) -> dict:
        def pct(n: int, d: int) -> float:
            return round(100.0 * n / d, 1) if d else 0.0

        overhead = sorted(self.overhead_ms)
        return {
            "queries": self.queries,
            "share_with_folded_pointer_pct": pct(self.with_folded_pointer, self.queries),
            "share_with_any_pointer_pct": pct(self.with_any_pointer, self.queries),
            "entries_gained_per_query": round(statistics.fmean(self.gained), 2)
            if self.gained
            else 0.0,
            "queries_gaining_pct": pct(sum(1 for g in self.gained if g > 0), self.queries),
            "entries_lost": sum(len(ids) for _, ids in self.lost),
            "note_coverage_pct": pct(self.pointers_with_note, self.pointers),
            "fold_overhead_ms_p50": round(_percentile(overhead, 50), 2),
            "fold_overhead_ms_p95": round(_percentile(overhead, 95), 2),
            "results_with_neighbor_slot_pressure_pct": pct(
                self.results_under_pressure, self.results_seen
            ),
            "queries_with_neighbor_slot_pressure_pct": pct(
                self.queries_under_pressure, self.queries
            ),
        }


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    k = (len(values) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def payload_ids(body: dict) -> tuple[set[str], set[str], list[dict]]:
    """(result ids, every id in the payload, every pointer) of a query response; pointers
    include hop lines (``kind: "hop"``) and compact pointers that kept a note (a compact
    pointer without one is in the payload but among no pointers)."""
    results = {r["id"] for r in body["results"]}
    pointers = [p for r in body["results"] for p in (*r["related"], *r["neighbors"])]
    pointers += [{**h, "kind": "hop"} for r in body["results"] for h in r.get("hops") or ()]
    compact_ids = set()
    for r in body["results"]:
        for short in r.get("compact_pointers") or ():
            head, _, note = short.partition(": ")
            compact_ids.add(head.split()[0])  # in the payload, with or without its note
            if note:
                pid, relation, direction, kind = head.split()
                pointers.append(
                    {
                        "id": pid,
                        "relation": relation,
                        "direction": direction,
                        "kind": kind,
                        "note": note,
                    }
                )
    return results, results | compact_ids | {p["id"] for p in pointers}, pointers


def noted_edge_counts(bank: Bank, short_ids: list[str]) -> dict[str, int]:
    """Current noted edges (either direction) of each entry, in one statement."""
    if not short_ids:
        return {}
    sql = """
        SELECT e.short_id, count(ed.id)
          FROM kb_entry e
          JOIN graph_edge ed ON (ed.from_entry_id = e.id OR ed.to_entry_id = e.id)
         WHERE e.bank_id = %(bank)s AND e.short_id = ANY(%(ids)s)
           AND ed.invalidated_at IS NULL AND ed.note <> ''
           AND (ed.valid_from IS NULL OR ed.valid_from <= now())
           AND (ed.valid_to IS NULL OR ed.valid_to > now())
         GROUP BY e.short_id
    """
    with connection.cursor() as cur:
        cur.execute(sql, {"bank": bank.pk, "ids": short_ids})
        return dict(cur.fetchall())


def replay(
    bank: Bank,
    *,
    days: int = 7,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReplayReport:
    """Replay the bank's logged queries of the last ``days`` days (no usage, no logging)."""
    since = timezone.now() - dt.timedelta(days=days)
    logs = list(
        QueryLog.objects.filter(bank=bank, created_at__gte=since).order_by("created_at")[
            : limit or None
        ]
    )
    report = ReplayReport()
    known = set(QueryParams.__dataclass_fields__) - {"query", "fold"}
    for i, log in enumerate(logs, start=1):
        params = {k: v for k, v in (log.params or {}).items() if k in known}
        # The replay measures folding, not the token budget: unless the agent asked for a
        # budget, none cuts the answer (the budget's own cost is measured by bench/answers.py).
        if params.get("budget_tokens") is None:
            params["budget_tokens"] = 1_000_000
        vector = embed_query(log.query)
        timings = {True: [], False: []}
        bodies = {}
        for fold in (False, True, False, True):  # alternate to cancel warm-cache bias
            started = time.perf_counter()
            bodies[fold] = run_query(
                bank, QueryParams(log.query, fold=fold, **params), record=False, query_vector=vector
            )
            timings[fold].append((time.perf_counter() - started) * 1000)
        flat_ids = [r["id"] for r in bodies[False]["results"]]
        _, shown, pointers = payload_ids(bodies[True])
        report.queries += 1
        if any(r["related"] for r in bodies[True]["results"]):
            report.with_folded_pointer += 1
        if pointers:
            report.with_any_pointer += 1
        report.gained.append(len(shown - set(flat_ids)))
        missing = [x for x in flat_ids if x not in shown]
        if missing:
            report.lost.append((log.query, missing))
        report.pointers += len(pointers)
        report.pointers_with_note += sum(1 for p in pointers if p.get("note"))
        report.overhead_ms.append(min(timings[True]) - min(timings[False]))
        # Neighbour-slot pressure: results with more noted edges than the request's slots,
        # where the choice of neighbours (by relevance to the query) decides what is handed over.
        slots = params.get("neighbors", 3)
        counts = noted_edge_counts(bank, [r["id"] for r in bodies[True]["results"]])
        pressured = sum(1 for n in counts.values() if n > slots)
        report.results_seen += len(bodies[True]["results"])
        report.results_under_pressure += pressured
        report.queries_under_pressure += pressured > 0
        if progress:
            progress(i, len(logs))
    return report
