"""Personalized PageRank search (``003_*``): seeds from flat search, a budgeted k-hop
subgraph over current edges, power iteration with teleport back to the seeds.

The subgraph is read one batched statement per hop. Each frontier entry contributes at most
``per_node`` edges per direction and each hop at most ``per_hop`` edges, and the node set stops
growing at ``max_nodes``, so a hub with ten thousand edges costs the same as one with two
hundred: hubs cannot blow the walk up. Whenever a ceiling cuts something the result says
``truncated``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from graph.edges.current import current_edge_sql
from graph.models import EdgeType
from kb.errors import InvalidInput
from kb.models import Bank, Entry, EntryStatus
from kb.services.search import rank_candidates

DAMPING = 0.85  # α of 003_*: the walk follows an edge with probability α, else teleports
MAX_ITERATIONS = 100
TOLERANCE = 1e-9

# One statement per hop. ``LIMIT`` inside each lateral arm is the per-entry budget (the
# open-edge partial indexes answer it without reading a hub's other edges); the outer LIMIT
# is the per-hop budget.
_CURRENT = current_edge_sql("e", "%(now)s")
_HOP_SQL = f"""
SELECT x.id, x.from_entry_id, x.to_entry_id, x.type_id, x.anchor
  FROM unnest(%(frontier)s::bigint[]) AS f(id)
  CROSS JOIN LATERAL (
      (SELECT e.id, e.from_entry_id, e.to_entry_id, e.type_id, f.id AS anchor
         FROM graph_edge e
        WHERE e.from_entry_id = f.id AND e.bank_id = %(bank)s
          AND {_CURRENT}
        LIMIT %(per_node)s)
      UNION ALL
      (SELECT e.id, e.from_entry_id, e.to_entry_id, e.type_id, f.id AS anchor
         FROM graph_edge e
        WHERE e.to_entry_id = f.id AND e.bank_id = %(bank)s
          AND {_CURRENT}
        LIMIT %(per_node)s)
  ) AS x
 LIMIT %(per_hop)s
"""

# Edges among the entries of the last hop, which no expansion read (bounded like a hop).
_CLOSING_SQL = f"""
SELECT e.id, e.from_entry_id, e.to_entry_id, e.type_id, e.from_entry_id AS anchor
  FROM graph_edge e
 WHERE e.bank_id = %(bank)s
   AND e.from_entry_id = ANY(%(frontier)s::bigint[])
   AND e.to_entry_id = ANY(%(frontier)s::bigint[])
   AND {_CURRENT}
 LIMIT %(per_hop)s
"""


@dataclass
class Subgraph:
    """The entries and current edges read around the seeds (edge id → (from, to, type))."""

    nodes: list[int]
    edges: dict[int, tuple[int, int, int]]
    truncated: bool = False
    limits_hit: list[str] = field(default_factory=list)
    hops_read: int = 0


@dataclass
class PPRHit:
    entry: Entry
    score: float
    seed: bool


@dataclass
class PPRResult:
    """Ranked entries, the seeds used (with their search scores) and the subgraph's size."""

    hits: list[PPRHit]
    seeds: list[tuple[Entry, float]]
    subgraph: Subgraph
    took_ms: float

    def as_json(self) -> dict:
        return {
            "results": [
                {
                    "id": h.entry.short_id,
                    "title": h.entry.title,
                    "kind": h.entry.kind.name,
                    "score": round(h.score, 6),
                    "seed": h.seed,
                }
                for h in self.hits
            ],
            "seeds": [
                {"id": e.short_id, "title": e.title, "search_score": round(s, 6)}
                for e, s in self.seeds
            ],
            "subgraph": {
                "nodes": len(self.subgraph.nodes),
                "edges": len(self.subgraph.edges),
                "truncated": self.subgraph.truncated,
                "limits_hit": self.subgraph.limits_hit,
            },
            "took_ms": round(self.took_ms, 1),
        }


def k_hop_subgraph(
    bank: Bank,
    seed_ids: Sequence[int],
    *,
    hops: int = 2,
    max_nodes: int = 5000,
    per_node: int = 200,
    per_hop: int | None = None,
) -> Subgraph:
    """The entries within ``hops`` current edges of the seeds (either direction) and the edges
    among them, read with at most ``hops + 1`` statements under the budgets above."""
    per_hop = per_hop or max(4 * max_nodes, per_node)
    now = timezone.now()
    nodes: dict[int, None] = dict.fromkeys(seed_ids)  # ordered set: discovery order
    edges: dict[int, tuple[int, int, int]] = {}
    limits: set[str] = set()
    frontier = list(nodes)
    hops_read = 0
    with connection.cursor() as cursor:
        for _ in range(hops):
            if not frontier:
                break
            cursor.execute(
                _HOP_SQL,
                {
                    "frontier": frontier,
                    "bank": bank.pk,
                    "now": now,
                    "per_node": per_node,
                    "per_hop": per_hop,
                },
            )
            rows = cursor.fetchall()
            hops_read += 1
            if len(rows) >= per_hop:
                limits.add("per_hop")
            per_anchor: dict[tuple[int, bool], int] = {}
            next_frontier: list[int] = []
            for edge_id, a, b, type_id, anchor in rows:
                key = (anchor, a == anchor)
                per_anchor[key] = per_anchor.get(key, 0) + 1
                other = b if a == anchor else a
                if other not in nodes:
                    if len(nodes) >= max_nodes:
                        limits.add("max_nodes")
                        continue
                    nodes[other] = None
                    next_frontier.append(other)
                edges[edge_id] = (a, b, type_id)
            if any(count >= per_node for count in per_anchor.values()):
                limits.add("per_node")
            frontier = next_frontier
        if frontier and hops_read == hops:
            cursor.execute(
                _CLOSING_SQL,
                {"frontier": frontier, "bank": bank.pk, "now": now, "per_hop": per_hop},
            )
            rows = cursor.fetchall()
            if len(rows) >= per_hop:
                limits.add("per_hop")
            for edge_id, a, b, type_id, _ in rows:
                edges[edge_id] = (a, b, type_id)
    return Subgraph(list(nodes), edges, bool(limits), sorted(limits), hops_read)


def personalized_pagerank(
    n: int,
    sources: np.ndarray,
    targets: np.ndarray,
    weights: np.ndarray,
    teleport: np.ndarray,
    *,
    damping: float = DAMPING,
) -> np.ndarray:
    """Stationary distribution of a walk that follows an edge (by weight) with probability
    ``damping`` and otherwise jumps to the teleport distribution. Edges are read as given
    (pass both directions for an undirected walk); dangling mass teleports too."""
    teleport = teleport / teleport.sum()
    out_weight = np.bincount(sources, weights=weights, minlength=n)
    share = np.divide(
        weights, out_weight[sources], out=np.zeros_like(weights), where=out_weight[sources] > 0
    )
    dangling = out_weight == 0
    rank = teleport.copy()
    for _ in range(MAX_ITERATIONS):
        flow = np.bincount(targets, weights=rank[sources] * share, minlength=n)
        lost = rank[dangling].sum()
        new = damping * flow + (1.0 - damping + damping * lost) * teleport
        if np.abs(new - rank).sum() < TOLERANCE:
            return new
        rank = new
    return rank


def _check_positive(name: str, value: int, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidInput(
            f"{name} must be an integer from {low} to {high}.",
            code="invalid_input",
            fields={name: f"Between {low} and {high}."},
        )
    return value


def ppr(
    bank: Bank,
    query: str,
    *,
    seeds: int = 5,
    hops: int = 2,
    max_nodes: int = 5000,
    limit: int = 20,
    per_node: int = 200,
    seed_entries: Sequence[Entry] | None = None,
    query_vector: Sequence[float] | None = None,
) -> PPRResult:
    """Rank the bank's entries by Personalized PageRank around the query's best flat matches.

    Seeds are the top ``seeds`` hits of flat search (vector and lexical arms), weighted by
    their search scores; ``seed_entries`` replaces them (scores equal). Edges count both ways,
    each weighted by its type's ``score_weight``. Merged and deleted entries never rank.
    """
    started = time.perf_counter()
    _check_positive("seeds", seeds, 1, 50)
    _check_positive("hops", hops, 1, 4)
    _check_positive("limit", limit, 1, 200)
    _check_positive("max_nodes", max_nodes, 1, 100_000)
    if seed_entries is None:
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput(
                "query must not be blank.", code="invalid_input", fields={"query": "Required."}
            )
        found = rank_candidates(bank, query, limit=seeds, lexical=True, query_vector=query_vector)
        seed_scores = {h.entry_id: max(h.score, 1e-6) for h in found}
    else:
        seed_scores = {e.pk: 1.0 for e in seed_entries if e.bank_id == bank.pk}
    if not seed_scores:
        return PPRResult([], [], Subgraph([], {}), (time.perf_counter() - started) * 1000)

    sub = k_hop_subgraph(bank, list(seed_scores), hops=hops, max_nodes=max_nodes, per_node=per_node)
    index = {entry_id: i for i, entry_id in enumerate(sub.nodes)}
    type_weight = dict(
        EdgeType.objects.filter(Q(bank__isnull=True) | Q(bank=bank)).values_list(
            "pk", "score_weight"
        )
    )
    if sub.edges:
        ends = np.array(
            [(index[a], index[b], type_weight.get(t, 1.0)) for a, b, t in sub.edges.values()],
            dtype=float,
        )
        a, b, w = ends[:, 0].astype(np.int64), ends[:, 1].astype(np.int64), ends[:, 2]
        sources, targets, weights = np.concatenate([a, b]), np.concatenate([b, a]), np.tile(w, 2)
    else:
        sources = targets = np.zeros(0, dtype=np.int64)
        weights = np.zeros(0)
    teleport = np.zeros(len(sub.nodes))
    for entry_id, score in seed_scores.items():
        teleport[index[entry_id]] = score
    scores = personalized_pagerank(len(sub.nodes), sources, targets, weights, teleport)

    order = np.argsort(-scores, kind="stable")
    # Read a little past ``limit`` so merged/deleted entries can be skipped without a refill.
    wanted = [sub.nodes[i] for i in order[: limit + 20]]
    entries = (
        Entry.objects.filter(bank=bank, pk__in=set(wanted) | set(seed_scores))
        .exclude(status__in=[EntryStatus.MERGED, EntryStatus.DELETED])
        .select_related("kind")
        .order_by()
        .in_bulk()
    )
    hits = []
    for i in order:
        entry = entries.get(sub.nodes[i])
        if entry is None:
            continue
        hits.append(PPRHit(entry, float(scores[i]), sub.nodes[i] in seed_scores))
        if len(hits) == limit:
            break
    seeds_used = [(entries[pk], s) for pk, s in seed_scores.items() if pk in entries]
    return PPRResult(hits, seeds_used, sub, (time.perf_counter() - started) * 1000)
