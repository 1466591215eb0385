"""Folding (``000_*``, exact algorithm in API.md "Query"): groups connected results, keeps one
representative per group, hands the rest over as typed pointers, refills the freed slots and
attaches one-hop neighbours from outside the pool.

The grouping is a pure function over the ranked pool and the edges among it
(:func:`fold_pool`), so every rule is testable on hand-built inputs; the two SQL statements the
fold adds to a flat query are :func:`edges_among` and :func:`neighbors_of`.
"""

from __future__ import annotations

import json
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from django.utils import timezone

from graph.edges.current import current_edge_sql
from graph.retrieval.relevance import (
    HOP_LINES,
    HOP_RESULTS,
    NEIGHBOR_CANDIDATE_CAP,
    NOTE_RELEVANCE_SQL,
    NOTE_TSQUERY_SQL,
    note_terms,
    relevance_params,
    vector_relevance_sql,
)
from kb.models import Bank
from kb.prepared import fetch_prepared

PROTECTED = 2  # the two best-ranked results always stand as themselves


@dataclass(frozen=True)
class PoolEdge:
    """A current edge between two pool members."""

    id: int
    source: int
    target: int
    relation: str
    fold_role: str  # "dominates" | "parent" | ""
    priority: int
    note: str
    note_relevance: float = 0.0  # the note's full-text rank against the query, in [0, 1)
    # A ``corrects`` edge's source is live and unexpired (only a current corrector corrects,
    # API.md "Corrections"). Looked up only where the fold asks, for an edge into one of the
    # pool's top two (``PROTECTED``); true for every other edge.
    source_current: bool = True


@dataclass
class Folded:
    """A pool member folded into a representative, with how it is reached."""

    entry_id: int
    relation: str
    direction: str  # seen from the representative (or from ``via`` when not adjacent)
    note: str
    via: dict | None = None  # {"id": member entry id, "relation", "direction"}
    note_relevance: float = 0.0


@dataclass
class FoldedResult:
    entry_id: int
    position: int  # the group's best pool rank (protected entries keep their own)
    related: list[Folded] = field(default_factory=list)


@dataclass
class FoldPlan:
    results: list[FoldedResult]
    groups: int
    folded: int
    refilled: int


class _UnionFind:
    def __init__(self, items: Sequence[int]):
        self.parent = {i: i for i in items}

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def _best_edge(edges: list[PoolEdge]) -> PoolEdge:
    return min(edges, key=lambda e: (-e.priority, e.note == "", e.id))


def _dominated(members: set[int], edges: list[PoolEdge]) -> set[int]:
    """Members that yield to another member: the target of a dominating edge (superseded,
    corrected, clarified) and the source of a parent edge (part of, split from, derived from)."""
    out = set()
    for e in edges:
        if e.source in members and e.target in members:
            if e.fold_role == "dominates":
                out.add(e.target)
            elif e.fold_role == "parent":
                out.add(e.source)
    return out


def _folded_item(rep: int, item: int, adjacency: dict[int, dict[int, list[PoolEdge]]]) -> Folded:
    direct = adjacency[rep].get(item)
    if direct:
        edge = _best_edge(direct)
        direction = "out" if edge.source == rep else "in"
        return Folded(item, edge.relation, direction, edge.note, None, edge.note_relevance)
    # Shortest path from the representative; ``via`` is the member adjacent to the item on it.
    previous = {rep: rep}
    queue = deque([rep])
    while queue:
        node = queue.popleft()
        if node == item:
            break
        for nxt in sorted(adjacency[node]):
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    member = previous[item]
    edge = _best_edge(adjacency[member][item])
    direction = "out" if edge.source == member else "in"
    via = {"id": member, "relation": edge.relation, "direction": direction}
    return Folded(item, edge.relation, direction, edge.note, via, edge.note_relevance)


def fold_pool(ranked: Sequence[int], edges: Sequence[PoolEdge], limit: int) -> FoldPlan:
    """Fold a ranked pool (entry ids, best first) over the edges among it; keep ``limit`` results."""
    rank = {entry_id: i for i, entry_id in enumerate(ranked, start=1)}
    edges = [e for e in edges if e.source in rank and e.target in rank and e.source != e.target]
    uf = _UnionFind(ranked)
    adjacency: dict[int, dict[int, list[PoolEdge]]] = {i: {} for i in ranked}
    for e in edges:
        uf.union(e.source, e.target)
        adjacency[e.source].setdefault(e.target, []).append(e)
        adjacency[e.target].setdefault(e.source, []).append(e)
    groups: dict[int, list[int]] = {}
    for entry_id in ranked:
        groups.setdefault(uf.find(entry_id), []).append(entry_id)

    results: list[FoldedResult] = []
    for members in groups.values():  # members are in rank order
        member_set = set(members)
        protected = [m for m in members if rank[m] <= PROTECTED]
        standing: dict[int, int] = {}  # a corrector that stands beside what it corrects
        if protected:
            reps = list(protected)
            host = protected[0]
            # A protected entry stands even when corrected: its current corrector stands too
            # (at its rank; the answer then orders it first), never folded under a third entry.
            # A retired or expired corrector corrects nothing: it folds like any member.
            for e in edges:
                if (
                    e.relation == "corrects"
                    and e.source_current
                    and e.target in protected
                    and e.source in member_set
                ):
                    if e.source not in reps:
                        reps.append(e.source)
                        standing[e.source] = rank[e.target]
        else:
            dominated = _dominated(member_set, [e for e in edges if e.source in member_set])
            host = next((m for m in members if m not in dominated), members[0])
            reps = [host]
        best = rank[members[0]]
        for rep in reps:
            position = standing.get(rep, rank[rep] if protected else best)
            results.append(FoldedResult(rep, position))
        hosted = next(r for r in results if r.entry_id == host)
        for m in members:
            if m not in reps:
                hosted.related.append(_folded_item(host, m, adjacency))
    results.sort(key=lambda r: r.position)
    # Nothing of the flat top ``limit`` is lost: a result standing at a position within it
    # is never cut. Only a corrector standing beside a protected result (from beyond the top
    # ``limit``) can make them more than ``limit``; the answer then holds one more each.
    kept = results[: max(limit, sum(1 for r in results if r.position <= limit))]
    return FoldPlan(
        results=kept,
        groups=len(groups),
        folded=sum(len(r.related) for r in kept),
        refilled=sum(1 for r in kept if r.position > limit),
    )


# --- the two statements the fold adds ---------------------------------------------------------

_CURRENT = "ed.bank_id = %(bank)s AND " + current_edge_sql("ed", "%(now)s")


# The bank's replacement types: the core ``supersedes`` and the bank's own of that name.
_REPLACEMENT_TYPE_IDS = (
    "SELECT id FROM graph_edgetype "
    "WHERE name = 'supersedes' AND (bank_id IS NULL OR bank_id = %(bank)s)"
)


# The bank's correction types (the core ``corrects`` and the bank's own of that name).
_CORRECTION_TYPE_IDS = (
    "SELECT id FROM graph_edgetype "
    "WHERE name = 'corrects' AND (bank_id IS NULL OR bank_id = %(bank)s)"
)


@dataclass
class PoolGraph:
    """What the fold's first statement reads: the current edges among the pool, and the ids of
    the bank's ``supersedes`` types (so the neighbour statement can name them as literals)."""

    edges: list[PoolEdge]
    replacement_types: list[int]
    correction_types: list[int] = field(default_factory=list)


_NOTE_REL = NOTE_RELEVANCE_SQL.format(note="ed.note", tsv="ed.note_tsv", tsquery="types.tq")
_EDGES_AMONG_SQL = f"""
        WITH types AS (  -- one scan of the vocabulary for both lists
            SELECT coalesce(array_agg(id ORDER BY id) FILTER (WHERE name = 'supersedes'),
                            '{{}}') AS sup,
                   coalesce(array_agg(id ORDER BY id) FILTER (WHERE name = 'corrects'),
                            '{{}}') AS cor,
                   {NOTE_TSQUERY_SQL} AS tq  -- the query's words, parsed once
              FROM graph_edgetype
             WHERE name IN ('supersedes', 'corrects') AND (bank_id IS NULL OR bank_id = %(bank)s)
        )
        SELECT types.sup, types.cor, x.* FROM types LEFT JOIN LATERAL (
        SELECT ed.id, ed.from_entry_id, ed.to_entry_id, t.name, t.fold_role, t.neighbor_priority,
               ed.note, {_NOTE_REL},
               -- is the source of a corrects edge into the top two current? (looked up for
               -- those edges alone: the fold stands such a corrector beside its result)
               CASE WHEN t.name <> 'corrects' OR NOT ed.to_entry_id = ANY(%(protected)s)
                    THEN true ELSE EXISTS (
                   SELECT 1 FROM kb_entry src WHERE src.id = ed.from_entry_id
                      AND src.status NOT IN ('merged', 'deleted', 'retired', 'cancelled')
                      AND (src.expires_at IS NULL OR src.expires_at >= %(now)s::date)) END
          FROM graph_edge ed JOIN graph_edgetype t ON t.id = ed.type_id
         WHERE {_CURRENT} AND %(many)s
           AND ed.from_entry_id = ANY(%(ids)s) AND ed.to_entry_id = ANY(%(ids)s)
        ) x ON true
"""


def edges_among(bank: Bank, ids: Sequence[int], query: str = "") -> PoolGraph:
    """Every current edge among ``ids``, each with its note's relevance to ``query``, and the
    bank's replacement (``supersedes``) type ids, in one statement."""
    sql = _EDGES_AMONG_SQL
    params = {
        "bank": bank.pk,
        "now": timezone.now(),
        "ids": list(ids),
        "protected": list(ids[:PROTECTED]),
        "many": len(ids) >= 2,
        "note_terms": note_terms(query),
    }
    rows = fetch_prepared(sql, params)
    return PoolGraph(
        [
            PoolEdge(*row[2:9], float(row[9] or 0.0), bool(row[10]))
            for row in rows
            if row[2] is not None
        ],
        list(rows[0][0]) if rows else [],
        list(rows[0][1]) if rows else [],
    )


@dataclass
class Neighbor:
    result_id: int
    entry_id: int
    short_id: str
    title: str
    summary: str
    kind: str
    status: str
    steps: list | None
    relation: str
    direction: str  # seen from the result
    note: str
    pinned: bool
    relevance: float | None = None  # None: the neighbour has no vectors yet
    content: str | None = None  # only for ids the request asked to expand


@dataclass(slots=True)
class Hop:
    """A hop line: a noted edge of a result past its neighbour slots (the id and the note)."""

    result_id: int
    entry_id: int
    short_id: str
    relation: str
    direction: str  # seen from the result
    note: str


@dataclass
class NeighborSelection:
    neighbors: list[Neighbor]
    capped: list[int]  # results whose candidate read stopped at the cap (a hub)
    hops: list[Hop] = field(default_factory=list)  # noted edges past the slots, ranked
    hops_cut: int = 0  # noted candidates past the slots the per-result cap left out
    correctors: dict[int, list[str]] = field(default_factory=dict)  # result -> current correctors


# Each result's candidates are read in index order (partial indexes on (end, id) of open
# edges, noted and bare apart): per direction the newest ``cap`` noted edges and the newest
# ``cap // 3`` bare ones, so a hub costs a bounded number of rows, not its degree. A
# replacement (supersedes, in) is read on its own arm so the cap can never hide it. Its type ids
# are literals, one arm each, read by the fold's first statement: with the type left to a
# subquery the planner cannot see how rare replacements are and, with fresh statistics, walks
# the GiST exclusion index on its second column instead of ``edge_to_open`` (15 ms per result,
# 120 ms a query at 100k entries; bench/fold.py). The candidates are then ranked by relevance.
_NEIGHBORS_SQL = """
WITH qv AS MATERIALIZED (  -- the query's vector and words, each parsed once
    SELECT %(qvec)s::vector AS v, {tsquery} AS tq
),
r AS (SELECT unnest(%(results)s::bigint[]) AS id),
e AS (
    SELECT r.id AS result_id, c.* FROM r CROSS JOIN LATERAL (
        (SELECT 1 AS arm, ed.id AS edge_id, ed.to_entry_id AS other_id, 'out'::text AS direction,
                ed.type_id, ed.note, ed.note_tsv
           FROM graph_edge ed
          WHERE ed.from_entry_id = r.id AND ed.invalidated_at IS NULL AND ed.note <> ''
            AND {current} AND NOT ed.to_entry_id = ANY(%(pool)s)
          ORDER BY ed.id DESC LIMIT %(cap)s)
        UNION ALL
        (SELECT 2, ed.id, ed.from_entry_id, 'in', ed.type_id, ed.note, ed.note_tsv
           FROM graph_edge ed
          WHERE ed.to_entry_id = r.id AND ed.invalidated_at IS NULL AND ed.note <> ''
            AND {current} AND NOT ed.from_entry_id = ANY(%(pool)s)
          ORDER BY ed.id DESC LIMIT %(cap)s)
        UNION ALL
        (SELECT 3, ed.id, ed.to_entry_id, 'out', ed.type_id, ed.note, ed.note_tsv
           FROM graph_edge ed
          WHERE ed.from_entry_id = r.id AND ed.invalidated_at IS NULL AND ed.note = ''
            AND {current} AND NOT ed.to_entry_id = ANY(%(pool)s)
          ORDER BY ed.id DESC LIMIT %(bare_cap)s)
        UNION ALL
        (SELECT 4, ed.id, ed.from_entry_id, 'in', ed.type_id, ed.note, ed.note_tsv
           FROM graph_edge ed
          WHERE ed.to_entry_id = r.id AND ed.invalidated_at IS NULL AND ed.note = ''
            AND {current} AND NOT ed.from_entry_id = ANY(%(pool)s)
          ORDER BY ed.id DESC LIMIT %(bare_cap)s)
{replacement_arms}
    ) c
),
capped AS (
    SELECT DISTINCT result_id FROM (
        SELECT result_id FROM e WHERE arm < 5 GROUP BY result_id, arm
        HAVING count(*) >= CASE WHEN arm < 3 THEN %(cap)s ELSE %(bare_cap)s END
    ) x
),
f AS (
    SELECT DISTINCT ON (e.result_id, e.other_id) e.result_id, e.edge_id, e.other_id,
           e.direction, e.note, e.note_tsv, t.name, t.neighbor_priority,
           (t.name = 'supersedes' AND e.direction = 'in'
            AND NOT e.other_id = ANY(%(results)s)) AS pin
      FROM e JOIN graph_edgetype t ON t.id = e.type_id
     ORDER BY e.result_id, e.other_id, 9 DESC, (e.note <> '') DESC, t.neighbor_priority DESC,
              e.edge_id
),
s AS MATERIALIZED (  -- each candidate's relevance computed once, not per use below
    SELECT f.result_id, f.edge_id, f.other_id, f.direction, f.note, f.name,
           f.neighbor_priority, f.pin, {vrel} AS vrel,
           {nrel} AS nrel, 1 - (ee.vector <=> qv.v) AS ncos
      FROM f CROSS JOIN qv
      JOIN kb_entry o ON o.id = f.other_id
      LEFT JOIN kb_entryembedding emb ON emb.entry_id = f.other_id
      LEFT JOIN graph_edgeembedding ee ON ee.edge_id = f.edge_id AND f.note <> ''
     WHERE o.status NOT IN ('merged', 'deleted')
),
ranked AS (  -- one sort: the rank, the rank among noted edges, the noted edges in all
    SELECT scored.result_id, scored.other_id, scored.direction, scored.note, scored.name,
           scored.pin, scored.rel, row_number() OVER w AS rn,
           count(*) FILTER (WHERE scored.note <> '' AND NOT scored.pin) OVER w AS noted_no,
           -- the last row's running count is the result's count of noted edges: flagged in
           -- the same window pass (a whole-partition frame cost a second one)
           lead(true, 1, false) OVER w = false AS last
      FROM (SELECT s.*, coalesce(s.vrel, 0) + %(note_weight)s * s.nrel
                        + %(note_vector_weight)s * coalesce(s.ncos, 0) AS rel
              FROM s) scored
     WHERE scored.pin OR scored.vrel IS NULL OR scored.rel >= %(floor)s
    WINDOW w AS (PARTITION BY scored.result_id
                 ORDER BY scored.pin DESC, floor(scored.rel / %(band)s) DESC,
                          (scored.note <> '') DESC, scored.neighbor_priority DESC, scored.edge_id)
)
-- Neighbours (the first n, and a pinned replacement) with their texts; hop lines (noted edges
-- past the slots) of the first results (``hop_results``) with the id alone: the first
-- ``hops + n`` noted edges hold the first ``hops`` of them (the neighbours take at most n),
-- which the reader trims exactly. The last two columns give the result's count of noted edges
-- (stats.hops_cut): the running count on its last row, which comes as a 't' row when it is
-- neither a neighbour nor a hop line.
SELECT c.result_id, o.id, o.short_id, n.title, n.summary, k.name, n.status, n.steps,
       c.name, c.direction, c.note, c.pin, c.rel, c.rn, n.content,
       CASE WHEN n.id IS NOT NULL THEN 'n'
            WHEN c.note <> '' AND c.noted_no <= %(hops)s + %(n)s THEN 'h' ELSE 't' END,
       c.noted_no, c.last
  FROM ranked c JOIN kb_entry o ON o.id = c.other_id
  LEFT JOIN LATERAL (
      SELECT o.id, o.title, o.summary, o.status, o.steps, o.kind_id,
             CASE WHEN o.short_id = ANY(%(expand)s::text[]) THEN o.content END AS content
       WHERE c.rn <= %(n)s OR c.pin
  ) n ON true
  LEFT JOIN kb_entrykind k ON k.id = n.kind_id
 WHERE c.rn <= %(n)s OR c.pin
    OR (c.result_id = ANY(%(hop_results)s)
        AND (c.last OR (c.note <> '' AND c.noted_no <= %(hops)s + %(n)s)))
UNION ALL
SELECT result_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, 'x', NULL, NULL
  FROM capped
UNION ALL  -- a current corrector of each result, wherever it is (API.md "Corrections"): one
           -- row per result however many correctors a hub has
SELECT r.id, NULL, cr.short_id, NULL, NULL, NULL, NULL, NULL, 'corrects', 'in', NULL, NULL,
       NULL, cr.edge_id, NULL, 'c', NULL, NULL
  FROM r CROSS JOIN LATERAL (  -- the first the index yields: edges are read until one end is
                               -- current, never all of a hub's read and sorted to pick one
    SELECT o.short_id, ed.id AS edge_id
      FROM graph_edge ed JOIN kb_entry o ON o.id = ed.from_entry_id
     WHERE ed.to_entry_id = r.id AND {current} AND ed.type_id {correction_test}
       AND o.status NOT IN ('merged', 'deleted', 'retired', 'cancelled')
       AND (o.expires_at IS NULL OR o.expires_at >= %(now)s::date)
     LIMIT 1
  ) cr
 ORDER BY 1, 14
"""


_REPLACEMENT_ARM = """
        UNION ALL
        (SELECT 5, ed.id, ed.from_entry_id, 'in', ed.type_id, ed.note, ed.note_tsv
           FROM graph_edge ed
          WHERE ed.to_entry_id = r.id AND {current} AND ed.type_id {type_test}
            AND NOT ed.from_entry_id = ANY(%(results)s)
          ORDER BY ed.id DESC LIMIT 3)"""


def _replacement_arms(type_ids: Sequence[int] | None) -> str:
    """Arm 5 of the candidate read, once per replacement type id (a literal the planner can
    estimate), or with a subquery when the ids are not known."""
    if type_ids is None:
        tests = [f"= ANY(ARRAY({_REPLACEMENT_TYPE_IDS}))"]
    else:
        tests = [f"= {int(type_id)}" for type_id in type_ids]
    return "".join(_REPLACEMENT_ARM.format(type_test=test, current=_CURRENT) for test in tests)


def _type_test(type_ids: Sequence[int] | None, lookup: str) -> str:
    """``= ANY('{…}')`` of literal type ids the planner can estimate, or the lookup itself."""
    if type_ids is None:
        return f"= ANY(ARRAY({lookup}))"
    return f"= ANY('{{{','.join(str(int(t)) for t in type_ids)}}}'::bigint[])"


@lru_cache(maxsize=64)
def _neighbors_sql(replacement_types: tuple | None, correction_types: tuple | None) -> str:
    """The neighbour statement's text for a bank's type ids (built once per shape)."""
    return _NEIGHBORS_SQL.format(
        current=_CURRENT,
        replacement_arms=_replacement_arms(replacement_types),
        correction_test=_type_test(correction_types, _CORRECTION_TYPE_IDS),
        vrel=vector_relevance_sql("emb"),
        nrel=NOTE_RELEVANCE_SQL.format(note="f.note", tsv="f.note_tsv", tsquery="qv.tq"),
        tsquery=NOTE_TSQUERY_SQL,
    )


def neighbors_of(
    bank: Bank,
    result_ids: Sequence[int],
    pool_ids: Sequence[int],
    per_result: int,
    *,
    query: str = "",
    query_vector: Sequence[float] | None = None,
    floor: float | None = None,
    cap: int = NEIGHBOR_CANDIDATE_CAP,
    expand: Sequence[str] = (),
    replacement_types: Sequence[int] | None = None,
    correction_types: Sequence[int] | None = None,
    hops: int = HOP_LINES,
    hop_results: int = HOP_RESULTS,
) -> NeighborSelection:
    """Up to ``per_result`` one-hop neighbours per result from outside the pool, in one
    statement. A result superseded by an entry outside the results gets that replacement first
    (pinned); the rest are ranked by relevance to the query (API.md step 7), then noted edges,
    then the edge type's neighbour priority. Neighbours below ``floor`` are left out (a
    neighbour without vectors yet is judged by its note alone and never dropped).
    ``replacement_types`` are the bank's ``supersedes`` type ids (:func:`edges_among` reads
    them); without them the statement looks them up itself, at the risk of a worse plan.
    The same statement hands over up to ``hops`` further noted edges in the same order (hop
    lines) for each of the first ``hop_results`` of ``result_ids`` (given in answer order), and
    a current corrector of every result wherever it is."""
    if not result_ids:
        return NeighborSelection([], [])
    sql = _neighbors_sql(
        None if replacement_types is None else tuple(replacement_types),
        None if correction_types is None else tuple(correction_types),
    )
    params = {
        **relevance_params(bank, query, query_vector),
        "bank": bank.pk,
        "now": timezone.now(),
        "results": list(result_ids),
        "pool": list(pool_ids),
        "n": per_result,
        "cap": cap,
        "bare_cap": max(1, cap // 3),
        "floor": -1.0 if floor is None else floor,
        "hops": hops,
        "hop_results": list(result_ids[:hop_results]),
        "expand": list(expand),
    }
    return _selection(fetch_prepared(sql, params), hops, set(result_ids[:hop_results]))


def _selection(rows, hops: int, hop_results: set[int]) -> NeighborSelection:
    """The neighbour statement's rows, by role: ``n`` neighbour, ``h`` a noted edge past the
    slots (the first ``hops`` per result kept as hop lines), ``t`` only the last candidate's
    running count of noted edges, ``x`` a result whose candidate read stopped at the cap,
    ``c`` a result's current corrector. ``hops_cut`` counts the noted edges past the slots of
    the ``hop_results`` that the cap left out."""
    selection = NeighborSelection([], [])
    kept: dict[int, int] = {}
    noted: dict[int, int] = {}
    for row in rows:
        role = row[15]
        if role == "n":
            selection.neighbors.append(_neighbor(row))
        elif role == "h":
            if kept.get(row[0], 0) < hops:
                kept[row[0]] = kept.get(row[0], 0) + 1
                selection.hops.append(Hop(row[0], row[1], row[2], row[8], row[9], row[10]))
        elif role == "x":
            selection.capped.append(row[0])
        elif role == "c":
            selection.correctors.setdefault(row[0], []).append(row[2])
        if row[17] and row[0] in hop_results:  # the result's last candidate: its count
            noted[row[0]] = row[16]
    # noted edges of a result past its slots, less the hop lines handed over
    in_slots = Counter(n.result_id for n in selection.neighbors if n.note and not n.pinned)
    selection.hops_cut = sum(
        max(total - in_slots[result] - hops, 0) for result, total in noted.items()
    )
    return selection


def _neighbor(row) -> Neighbor:
    (result_id, entry_id, short_id, title, summary, kind, status, steps) = row[:8]
    relation, direction, note, pin, relevance = row[8:13]
    if isinstance(steps, str):  # jsonb arrives decoded from psycopg; text only from old rows
        steps = json.loads(steps)
    return Neighbor(
        result_id,
        entry_id,
        short_id,
        title,
        summary,
        kind,
        status,
        steps,
        relation,
        direction,
        note,
        pin,
        None if relevance is None else float(relevance),
        row[14],
    )
