"""Parameterised traversals (``004_*`` 12.7–12.8): typed, budgeted, bi-temporal walks.

The walk is a visited-set breadth-first search — never the full path enumeration of
``001_*`` — with one allow-list of relations and a direction per hop. Guarantees:

- One SQL statement per hop reads the allowed edges of the whole frontier. Both clocks
  (``valid_at`` and ``as_of``, default now) and the bank are predicates of that statement, so
  edges of another time or another bank never enter the walk, the budget or the counts.
- ``max_expansions`` counts edge records read across the walk. Each hop asks the database for
  at most the remaining budget + 1 rows (``LIMIT``); the extra row only proves the budget was
  exceeded and is never expanded. A hub of 15,000 edges costs at most the budget.
- A node reached at depth d keeps every parent from depth d − 1 and is expanded once. Paths are
  all parent chains from the start to each end node (a node the walk reached and did not go on
  from: the last hop, or no allowed edge onward to a node not already reached).
- Whenever a ceiling is reached the result says so: ``truncated``, ``limits_hit`` and the
  ``frontier`` of nodes whose expansion was cut. A partial answer is never shown as complete.

Request validation lives in :mod:`graph.traversal.requests`; the parameterised questions of
12.7 (dependents, owners, approvals) in :mod:`graph.traversal.questions`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import itertools
import json
import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from graph.edges.notes import SEPARATOR, note_ends
from graph.edges.vocab import relation_ids_for_bank
from graph.retrieval.tokens import DEFAULT_COUNTER, TokenCounter
from graph.traversal.reads import EdgeReads, EdgeRow, NodeInfo
from kb.errors import InvalidInput, NotFound
from kb.inputs import check_known
from kb.models import Bank, Entry
from kb.prepared import pipelined
from kb.presenters import iso
from kb.services.entries import kinds_for_bank

DIRECTIONS = ("out", "in", "both")
DEFAULT_DEPTH = 2  # relations mode without max_depth: two hops stay a specific answer (001_*)
MAX_DEPTH = 10
MAX_EXPANSIONS = 100_000
MAX_PATHS = 10_000
MAX_EVIDENCE_TOKENS = 1_000_000
MAX_RELATIONS_PER_STEP = 50

# --- the plan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One hop's allow-list: the relations it may cross and which way."""

    relations: tuple[str, ...]
    direction: str = "out"

    def as_json(self) -> dict:
        return {"relations": list(self.relations), "direction": self.direction}


@dataclass(frozen=True)
class Limits:
    """The ceilings of a walk. ``max_depth`` None: the length of the steps."""

    max_depth: int | None = None
    max_expansions: int = 200
    max_paths: int = 25
    max_evidence_tokens: int = 2000

    def as_json(self) -> dict:
        return {
            "max_depth": self.max_depth,
            "max_expansions": self.max_expansions,
            "max_paths": self.max_paths,
            "max_evidence_tokens": self.max_evidence_tokens,
        }


class Stamps(dict):
    """A time → its ISO 8601 text, each formatted once (the edges of one import share their
    timestamps); None → None."""

    def __init__(self):
        super().__init__({None: None})

    def __missing__(self, value: dt.datetime) -> str:
        text = self[value] = value.isoformat()
        return text


@dataclass
class TraversalResult:
    """What a walk found and how far it got; ``as_json`` is the API.md response."""

    bank: Bank
    start: Entry
    plan: dict  # {"steps": [...]} or {"relations", "direction", "max_depth"}
    limits: Limits
    valid_at: dt.datetime
    as_of: dt.datetime  # the transaction time asked (now when not given)
    depth: dict[int, int] = field(default_factory=dict)  # entry pk → depth, discovery order
    parents: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # pk → (parent, edge)
    # the edges of the walk's DAG (rows as read until _finish makes them EdgeRows)
    edges: dict[int, EdgeRow] = field(default_factory=dict)
    relation_names: dict[int, str] = field(default_factory=dict)
    nodes: dict[int, NodeInfo] = field(default_factory=dict)
    paths: list[tuple[list[int], list[int]]] = field(default_factory=list)  # (entry pks, edge ids)
    paths_total: int = 0
    truncated: bool = False
    limits_hit: list[str] = field(default_factory=list)
    frontier: list[int] = field(default_factory=list)
    expansions: int = 0  # edge records read and expanded (what max_expansions counts)
    edges_read: int = 0  # rows fetched, including the one row that proves a budget was exceeded
    evidence_tokens: int = 0
    withheld: set[int] = field(default_factory=set)  # edges whose note/evidence exceeded the budget
    start_given: Any = None
    start_matched: str | None = None
    # edge_bodies made by the walk while its last statement ran, for the first edges_json
    _bodies: dict[str, dict] | None = field(default=None, repr=False, compare=False)

    def hit(self, limit: str) -> None:
        self.truncated = True
        if limit not in self.limits_hit:
            self.limits_hit.append(limit)

    def end_nodes(self) -> list[int]:
        """Entries the walk reached and did not go on from, in discovery order."""
        with_children = {parent for links in self.parents.values() for parent, _ in links}
        start = self.start.pk
        return [pk for pk in self.depth if pk != start and pk not in with_children]

    def sid(self, pk: int) -> str:
        return self.nodes[pk].short_id

    def edge_json(self, edge: EdgeRow, stamp=iso) -> dict:
        body = self._edge_body(edge, stamp)
        body["from"], body["to"] = (
            self.nodes[edge.from_id].short_id,
            self.nodes[edge.to_id].short_id,
        )
        return body

    def _edge_body(self, edge: EdgeRow, stamp) -> dict:
        """``edge_json`` but for its ends ("from" and "to" None: entries' short ids)."""
        withheld = edge.id in self.withheld
        from_end, to_end = note_ends(edge.note)  # a system note reads right from each end
        return {
            "from": None,
            "to": None,
            "relation": self.relation_names.get(edge.type_id, "?"),
            "note": None if withheld else from_end,
            "note_in": None if withheld else to_end,
            "evidence": None if withheld else edge.evidence,
            "valid_from": stamp(edge.valid_from),
            "valid_to": stamp(edge.valid_to),
            "recorded_at": stamp(edge.recorded_at),
        }

    def edge_bodies(self, stamps: Stamps | None = None) -> dict[str, dict]:
        """``edge_json`` of every edge of the walk, keyed by id, but for the ends ("from" and
        "to" None), which need the entries: ``_finish`` makes them while PostgreSQL reads
        those. Thousands under a big budget: the common case, a plain note and nothing
        withheld, is read directly."""
        stamps = Stamps() if stamps is None else stamps
        out = {}
        names, withheld = self.relation_names, self.withheld
        for edge in self.edges.values():
            eid, _, _, type_id, note, evidence, valid_from, valid_to, recorded = edge
            note = note or ""
            if eid in withheld or SEPARATOR in note:
                out[str(eid)] = self._edge_body(edge, stamps.__getitem__)
                continue
            out[str(eid)] = {
                "from": None,
                "to": None,
                "relation": names.get(type_id, "?"),
                "note": note,
                "note_in": note,
                "evidence": evidence,
                "valid_from": stamps[valid_from],
                "valid_to": stamps[valid_to],
                "recorded_at": stamps[recorded],
            }
        return out

    def edges_json(self, stamps: Stamps | None = None) -> dict[str, dict]:
        """``edge_json`` of every edge of the walk, keyed by id: ``edge_bodies`` (those the
        walk made, the first time) with their ends."""
        bodies, self._bodies = self._bodies, None
        if bodies is None:
            bodies = self.edge_bodies(stamps)
        nodes = self.nodes
        for body, edge in zip(bodies.values(), self.edges.values(), strict=True):
            body["from"], body["to"] = nodes[edge[1]][0], nodes[edge[2]][0]
        return bodies

    def searched(self) -> dict:
        """What was asked, so an empty answer states its boundary (``004_*`` 12.11)."""
        start: dict = {"id": self.start.short_id}
        if self.start_given is not None:
            start.update({"given": self.start_given, "matched": self.start_matched})
        return {
            "bank": self.bank.slug,
            "start": start,
            **self.plan,
            "limits": self.limits.as_json(),
            "valid_at": iso(self.valid_at),
            "as_of": iso(self.as_of),
            "truncated": self.truncated,
        }

    def as_json(self) -> dict:
        with collector_paused():  # thousands of dicts, no cycle (see collector_paused)
            return self._as_json()

    def _as_json(self) -> dict:
        nodes = self.nodes
        return {
            "start": {"id": self.start.short_id, "title": self.start.title},
            "paths": [
                {"nodes": [nodes[pk][0] for pk in path], "edges": list(edge_ids)}
                for path, edge_ids in self.paths
            ],
            "nodes": {
                short_id: {"title": title, "kind": kind, "key": key}
                for short_id, title, kind, key in nodes.values()
            },
            "edges": self.edges_json(),
            "truncated": self.truncated,
            "limits_hit": list(self.limits_hit),
            "frontier": [nodes[pk][0] for pk in self.frontier],
            "counts": {
                "expansions": self.expansions,
                "nodes": len(self.depth),
                "edges": len(self.edges),
                "paths": len(self.paths),
                "paths_found": self.paths_total,
                "read": self.edges_read,
                "evidence_tokens": self.evidence_tokens,
            },
            "searched": self.searched(),
        }


# --- the walk ---------------------------------------------------------------------------------


def approx_tokens(edge: EdgeRow, counter: TokenCounter = DEFAULT_COUNTER) -> int:
    """Tokens of an edge's note and evidence (the project's one counter)."""
    if not edge.note and not edge.evidence:
        return counter.count("")
    text = (edge.note or "") + (
        json.dumps(edge.evidence, ensure_ascii=False) if edge.evidence else ""
    )
    return counter.count(text)


def _type_ids(step: Step, types: Mapping[str, int]) -> list[int]:
    check_known("relations", step.relations, types, what="relation(s)")
    if step.direction not in DIRECTIONS:
        raise InvalidInput(
            f"direction must be one of {', '.join(DIRECTIONS)}.",
            code="invalid_direction",
            fields={"direction": "Unknown direction."},
        )
    return sorted({types[name] for name in step.relations})


def _chains(result: TraversalResult, node: int) -> Iterator[tuple[list[int], list[int]]]:
    """Every parent chain from the start to ``node``, parents in the order they were found."""
    if node == result.start.pk:
        yield [node], []
        return
    for parent, edge_id in result.parents[node]:
        for nodes, edge_ids in _chains(result, parent):
            yield [*nodes, node], [*edge_ids, edge_id]


@dataclass(frozen=True)
class _Plan:
    """The hops a walk may take: one Step and its relation ids per depth, up to ``depth_cap``;
    ``planned`` is the number of steps given (None: one Step repeated up to max_depth)."""

    hops: list[Step]
    type_ids: list[list[int]]
    depth_cap: int
    planned: int | None
    described: dict  # the plan as ``searched`` states it


def _plan(steps: Step | Sequence[Step], limits: Limits, types, kinds) -> _Plan:
    if isinstance(steps, Step):
        depth_cap = limits.max_depth or DEFAULT_DEPTH
        hops, planned = [steps] * depth_cap, None  # only max_depth stops the walk
        described = {"relations": list(steps.relations), "direction": steps.direction}
        described["max_depth"] = depth_cap
    else:
        hops = list(steps)
        if not hops:
            raise InvalidInput("Give at least one step.", code="invalid_steps")
        planned = len(hops)
        depth_cap = min(planned, limits.max_depth or planned)
        described = {"steps": [step.as_json() for step in hops]}
    type_ids = [_type_ids(step, types) for step in hops]
    if kinds is not None:
        described["kinds"] = sorted(kinds)
    return _Plan(hops, type_ids, depth_cap, planned, described)


def traverse(
    bank: Bank,
    start_entry: Entry,
    steps: Step | Sequence[Step],
    limits: Limits | None = None,
    valid_at: dt.datetime | None = None,
    as_of: dt.datetime | None = None,
    kinds: Sequence[str] | None = None,
    counter: TokenCounter = DEFAULT_COUNTER,
    relation_ids: Mapping[str, int] | None = None,
) -> TraversalResult:
    """Walk from ``start_entry`` along ``steps`` — one Step per hop, or a single Step repeated
    every hop up to ``limits.max_depth`` (default 2) — with edges valid at ``valid_at`` and
    believed at ``as_of`` (both default to now), reaching only entries of ``kinds`` when given
    (an allow-list; the start is exempt). ``relation_ids``: the bank's vocabulary
    (``relation_ids_for_bank``) when the caller has read it already. Statements: one for the vocabulary, one per
    hop, at most one when the budget cuts a level's expansion, and one for the reached
    entries (which also asks which nodes of the last level could have gone on)."""
    limits = limits or Limits()
    if start_entry.bank_id != bank.pk:
        raise NotFound("The start is not an entry of this bank.", code="entry_not_found")
    now = timezone.now()
    types = relation_ids_for_bank(bank) if relation_ids is None else relation_ids
    plan = _plan(steps, limits, types, kinds)
    # believed_q(now) rather than believed_q(None) ("invalidated_at IS NULL"): the latter lets
    # the planner pick the partial GiST exclusion index for to_entry_id lookups, where
    # to_entry_id is not the leading column — thousands of times slower on a large bank.
    reads = EdgeReads(bank.pk, as_of or now, valid_at or now, _kind_ids(bank, kinds))
    result = TraversalResult(
        bank=bank,
        start=start_entry,
        plan=plan.described,
        limits=limits,
        valid_at=valid_at or now,
        as_of=as_of or now,
        relation_names={pk: name for name, pk in types.items()},
    )
    result.depth[start_entry.pk] = 0
    with collector_paused():
        _walk_and_finish(result, reads, plan, types, counter)
    return result


def _walk_and_finish(result: TraversalResult, reads: EdgeReads, plan: _Plan, types, counter):
    """The hops, the frontier where a ceiling cut them, then paths, evidence and entries."""
    cut, level = _walk(result, reads, plan)
    if cut:
        frontier = cut
    elif level and (plan.planned is None or plan.depth_cap < plan.planned):
        # Stopped by max_depth, not by the plan: cut only if some node could have gone on.
        hops = plan.hops
        nxt = hops[plan.depth_cap] if plan.depth_cap < len(hops) else hops[-1]
        frontier = _Frontier(set(), level, _type_ids(nxt, types), nxt.direction, "max_depth")
    else:
        frontier = None
    _finish(result, reads, frontier, counter)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block. A walk builds tens of thousands
    of small tuples, lists and dicts and no reference cycle: reference counting frees them
    all, while the collector, run every 700 allocations, scanned them again and again and
    promoted them into the old generation, whose full collections (~100 ms with Django's
    objects loaded) then fell on every few walks. Whoever switched it off already keeps it
    off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@dataclass
class _Frontier:
    """Where a ceiling cut the walk: the nodes ``known`` to be cut, and the nodes ``asked``
    about — cut if an allowed edge (``type_ids``, ``direction``) leads on to an entry not
    reached — asked in the statement that reads the reached entries. ``limit`` is hit
    (``max_depth``) only if some node is cut; ``max_expansions`` is hit already."""

    known: set[int]
    asked: list[int]
    type_ids: list[int]
    direction: str
    limit: str


def _walk(
    result: TraversalResult, reads: EdgeReads, plan: _Plan
) -> tuple[_Frontier | None, list[int]]:
    """The hops, breadth first, until the plan, the depth or the budget ends them: (where
    the budget cut the walk, if it did; the last level reached)."""
    budget = result.limits.max_expansions
    level = [result.start.pk]
    for d in range(plan.depth_cap):
        if not level:
            break
        direction = plan.hops[d].direction
        rows = _hop(reads, level, plan.type_ids[d], direction, budget + 1)
        result.edges_read += len(rows)
        expanded = rows[:budget]
        result.expansions += len(expanded)
        budget -= len(expanded)
        next_level = _expand(result, set(level), expanded, direction, d + 1)
        if len(rows) > len(expanded):  # the extra row: more edges than the budget allowed
            kept = len(expanded)
            return _cut_by_budget(result, reads, plan, d, (level, next_level), rows, kept), level
        level = next_level
    return None, level


_EDGE_ID = operator.itemgetter(0)
# The (near end, far end) fields of an EdgeRow crossed in a direction, in the order tried.
_ENDS = {"out": ((1, 2),), "in": ((2, 1),), "both": ((1, 2), (2, 1))}


def _hop(reads: EdgeReads, level, type_ids, direction: str, limit: int) -> list[tuple]:
    """The allowed edges touching ``level`` in ``direction`` whose far end is of an allowed
    kind: one statement, at most ``limit``, in id order (a deterministic expansion order
    among the rows read). Rows as read (``EdgeRow``'s fields, times in microseconds): they
    become ``EdgeRow``s in ``_finish``, while PostgreSQL answers the walk's last statement."""
    if limit <= 0 or not level or not type_ids:
        return []
    rows = reads.hop(level, type_ids, direction, limit)
    rows.sort(key=_EDGE_ID)
    return rows


def _expand(
    result: TraversalResult, in_level: set[int], expanded: list[tuple], direction: str, depth: int
) -> list[int]:
    """Record the nodes ``expanded`` reaches at ``depth`` and their parents; the new level."""
    next_level: list[int] = []
    depth_of, parents, edges = result.depth, result.parents, result.edges
    for edge in expanded:
        for near, far in _ENDS[direction]:
            src = edge[near]
            if src not in in_level:
                continue
            dst = edge[far]
            known = depth_of.get(dst)
            if known is None:
                depth_of[dst] = depth
                parents[dst] = [(src, edge[0])]
                next_level.append(dst)
            elif known == depth:
                parents[dst].append((src, edge[0]))
            else:
                continue  # reached earlier: the visited set keeps the walk finite
            edges[edge[0]] = edge
    return next_level


def _cut_by_budget(
    result: TraversalResult,
    reads: EdgeReads,
    plan: _Plan,
    d: int,
    levels: tuple[list[int], list[int]],
    rows: list[tuple],
    kept: int,
) -> _Frontier:
    """The budget ran out at hop ``d`` after expanding ``kept`` of the ``rows`` read: the
    frontier is the nodes of the level with an edge left unexpanded to an entry not reached
    before, and the nodes of the next level that could go on (asked with the entries). A
    node the extra row already proves open needs no statement."""
    result.hit("max_expansions")
    level, next_level = levels
    direction = plan.hops[d].direction
    earlier = [pk for pk, depth in result.depth.items() if depth <= d]
    frontier = _open_by(rows[kept:], set(level), set(earlier), direction, reads.kinds is None)
    frontier |= reads.still_open(
        [pk for pk in level if pk not in frontier],
        plan.type_ids[d],
        direction,
        skip_edges=[edge[0] for edge in rows[:kept]],
        reached=earlier,
    )
    if d + 1 < plan.depth_cap:
        onward = plan.type_ids[d + 1], plan.hops[d + 1].direction
        return _Frontier(frontier, next_level, *onward, "max_expansions")
    return _Frontier(frontier, [], [], direction, "max_expansions")


def _open_by(rows, level: set[int], earlier: set[int], direction: str, any_kind: bool) -> set:
    """Nodes of ``level`` that an unexpanded edge of ``rows`` links to an entry not in
    ``earlier``. The hop's statement checked the far end's kind; crossed both ways with a
    kind filter, which end was checked is unknown, so nothing is proven then."""
    if direction == "both" and not any_kind:
        return set()
    found = set()
    for _, from_id, to_id, *_rest in rows:
        if direction in ("out", "both") and from_id in level and to_id not in earlier:
            found.add(from_id)
        if direction in ("in", "both") and to_id in level and from_id not in earlier:
            found.add(to_id)
    return found


def _finish(
    result: TraversalResult,
    reads: EdgeReads,
    frontier: _Frontier | None,
    counter: TokenCounter = DEFAULT_COUNTER,
) -> None:
    """The reached entries and the frontier (one statement), then paths (up to max_paths) and
    evidence (up to max_evidence_tokens). The statement is sent first and read last: while
    PostgreSQL reads the entries and probes the frontier, Python makes the edge rows, the
    paths, the evidence and the answer's edges but for their ends, which need neither."""
    asked = () if frontier is None else (frontier.asked, frontier.type_ids, frontier.direction)
    with pipelined():
        pending = reads.entries_and_open(list(result.depth), *asked)
        result.edges = reads.edge_rows(result.edges)
        paths_cut = _paths(result)
        evidence_cut = _evidence(result, counter)
        result._bodies = result.edge_bodies()
        rows, onward = pending.result()
    if frontier is not None:
        cut = frontier.known | onward
        if cut:
            result.hit(frontier.limit)
            result.frontier = [pk for pk in result.depth if pk in cut]
    if paths_cut:  # limits_hit in the order the walk meets them: the frontier's first
        result.hit("max_paths")
    if evidence_cut:
        result.hit("max_evidence_tokens")
    new = tuple.__new__
    found = {row[0]: new(NodeInfo, row[1:5]) for row in rows}
    result.nodes = {pk: found[pk] for pk in result.depth}


def _paths(result: TraversalResult) -> bool:
    """Paths to the end nodes, up to max_paths (and how many there are): True if cut."""
    counts = {result.start.pk: 1}
    for pk, links in result.parents.items():  # discovery order: parents come first
        counts[pk] = counts[links[0][0]] if len(links) == 1 else sum(counts[p] for p, _ in links)
    ends = result.end_nodes()
    result.paths_total = sum(counts[pk] for pk in ends)
    limit = result.limits.max_paths
    every = itertools.chain.from_iterable(_chains(result, pk) for pk in ends)
    result.paths = list(itertools.islice(every, limit))
    return result.paths_total > limit


def _evidence(result: TraversalResult, counter: TokenCounter) -> bool:
    """Evidence up to max_evidence_tokens: answer-bearing edges first (in path order), then
    the rest of the walk's edges; past the budget every edge with something to say is
    withheld. True if the budget cut it."""
    order = list(dict.fromkeys(eid for _, edge_ids in result.paths for eid in edge_ids))
    on_paths = set(order)
    edges = result.edges
    order += [eid for eid in edges if eid not in on_paths]
    blank = counter.count("")  # most edges: no note, no evidence
    costs = [
        blank if not edge[4] and not edge[5] else approx_tokens(edge, counter)
        for edge in map(edges.__getitem__, order)
    ]
    budget, spent = result.limits.max_evidence_tokens, 0
    for position, cost in enumerate(costs):
        if spent + cost > budget:
            rest = zip(order[position:], costs[position:], strict=True)
            result.withheld = {eid for eid, c in rest if c > 0}
            result.evidence_tokens += spent
            return True
        spent += cost
    result.evidence_tokens += spent
    return False


def _kind_ids(bank: Bank, kinds: Sequence[str] | None) -> list[int] | None:
    """Ids of the allowed entry kinds (None: every kind)."""
    if kinds is None:
        return None
    vocabulary = kinds_for_bank(bank)
    return [vocabulary[name].pk for name in kinds if name in vocabulary]
