"""The query action behind ``POST /api/v1/banks/{bank}/query`` and the MCP tool
``query_knowledge_bank``: flat ranking from kb, then (by default) the fold over the graph,
returned as typed data (:mod:`graph.retrieval.answer_types`) that
:mod:`graph.retrieval.presenter` renders. The fold adds exactly two SQL statements to a flat
query whatever the pool, result or neighbour counts; everything the answer says about the
relations between results, confidence and size comes from what those statements read.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

from django.db import connection
from django.utils import timezone

from graph.models import QueryLog
from graph.retrieval.answer import (
    LEADER_WINDOW,
    asks_for_history,
    attach_links,
    confidence_band,
    floors,
    is_exact_hit,
    lift_arm_leaders,
    mark_correctors,
    order_corrections,
)
from graph.retrieval.answer_types import AnswerResult, Link, Pointer, QueryAnswer, QueryStats
from graph.retrieval.budget import DEFAULT_BUDGET_FLOOR, DEFAULT_BUDGET_PER_RESULT
from graph.retrieval.entries import answer_entries
from graph.retrieval.fold import edges_among, fold_pool, neighbors_of
from graph.retrieval.presenter import present_answer
from graph.retrieval.relevance import NOTE_WEIGHT
from graph.retrieval.tokens import DEFAULT_COUNTER, TokenCounter
from kb.inputs import check_known
from kb.models import Bank, Entry, EntryStatus
from kb.services.embedding import QueryVector
from kb.services.entries import kinds_for_bank
from kb.services.search import rank_and_embed
from kb.services.usage import USAGE_CTE, relaxed_commit_cte


@dataclass
class QueryParams:
    query: str
    limit: int = 8
    fold: bool = True
    pool: int = 20
    neighbors: int = 3
    lexical: bool = True  # hybrid by default (API.md "Changes")
    kinds: list[str] | None = None
    systems: list[str] | None = None
    include_retired: bool = True
    budget_tokens: int | None = None  # None: the bank's per-result default times ``limit``
    compact: bool = False
    expand: list[str] | None = None
    history: bool | None = None  # None: read from the query's words


def lifecycle_note(entry: Entry) -> str | None:
    """Why a result is downranked, in words (None for a live, unexpired entry)."""
    if entry.status == EntryStatus.RETIRED:
        return f"retired: {entry.retired_reason}" if entry.retired_reason else "retired"
    if entry.is_expired:
        return f"expired on {entry.expires_at.isoformat()}"
    if entry.status in (EntryStatus.DONE, EntryStatus.CANCELLED):
        return entry.status
    return None


def _result(entry: Entry, hit, rank: int, floor: float, high: float) -> AnswerResult:
    return AnswerResult(
        entry=entry,
        score=round(hit.score, 4),
        rank=rank,
        matched_by=hit.matched_by,
        lifecycle=lifecycle_note(entry),
        relevance=round(hit.relevance or 0.0, 4),
        confidence=confidence_band(hit.relevance, floor, high, exact=is_exact_hit(hit)),
    )


def _pointer(entry: Entry, kind: str, relation: str, direction: str, note: str) -> Pointer:
    return Pointer(
        id=entry.short_id,
        relation=relation,
        direction=direction,
        kind=kind,
        note=note,
        summary=entry.summary or entry.title,
        title=entry.title,
        status=entry.status,
        steps=entry.steps or None,  # playbooks come back whole wherever they appear
    )


def query_budget(bank: Bank, params: QueryParams) -> int:
    """The answer's token budget: the request's, else the bank's per-result default."""
    if params.budget_tokens is not None:
        return params.budget_tokens
    per_result = int(bank.setting("budget_tokens_per_result", DEFAULT_BUDGET_PER_RESULT))
    # The envelope (query, stats) costs about 150 tokens whatever the limit: a small limit
    # gets a floor, so the default never cuts the only result away.
    return max(per_result * params.limit, DEFAULT_BUDGET_FLOOR)


def execute_query(
    bank: Bank, params: QueryParams, *, query_vector: list[float] | None = None
) -> QueryAnswer:
    """The fold query (API.md "Query") as typed data: flat ranking from kb, then (by default)
    the fold's two statements. Nothing is counted or logged here (:func:`record_query`)."""
    started = time.perf_counter()
    if params.kinds:
        check_known("kinds", params.kinds, kinds_for_bank(bank), what="kind(s)")
    floor, high, _ = floors(bank)
    pool_size = max(params.pool, params.limit) if params.fold else params.limit
    if query_vector is not None and not isinstance(query_vector, QueryVector):
        query_vector = QueryVector(query_vector)  # the search and the fold share its text
    # The model runs inside the search, beside the lexical arm's statement (rank_and_embed).
    hits, query_vector = rank_and_embed(
        bank,
        params.query,
        limit=max(pool_size, LEADER_WINDOW),
        lexical=params.lexical,
        kinds=params.kinds,
        systems=params.systems,
        include_retired=params.include_retired,
        query_vector=query_vector,
    )
    hits = lift_arm_leaders(hits)[:pool_size]
    by_id = {h.entry_id: h for h in hits}
    stats = QueryStats(pool=len(hits), groups=len(hits))
    if params.fold:
        results, returned = _folded(bank, params, hits, stats, query_vector)
    else:
        entries = _entries([h.entry_id for h in hits[: params.limit]])
        results = [
            _result(entries[hit.entry_id], hit, i, floor, high)
            for i, hit in enumerate(hits[: params.limit], start=1)
        ]
        returned = [h.entry_id for h in hits[: params.limit]]
        attach_links(results, [], {})
    return QueryAnswer(
        bank=bank.slug,
        query=params.query,
        fold=params.fold,
        no_good_match=not any(
            (by_id[pk].relevance or 0.0) >= floor or is_exact_hit(by_id[pk]) for pk in returned
        ),
        results=results,
        stats=stats,
        budget_tokens=query_budget(bank, params),
        compact=params.compact,
        started=started,
    )


def _entries(ids: list[int]) -> dict[int, Entry]:
    """The entries an answer shows, with their kinds' names, in one statement."""
    return answer_entries(ids)


def _folded(bank, params, hits, stats, query_vector) -> tuple[list, list[int]]:
    """The fold over the pool: results with their folded pointers, links and corrections in
    answer order, then neighbours, hop lines and correctors (the fold's two statements).
    Only the entries the answer shows are read — the results and the members folded into
    them, not the pool's groups past the answer — and only after the plan says which."""
    floor, high, neighbor_floor = floors(bank)
    by_id = {h.entry_id: h for h in hits}
    pool_ids = [h.entry_id for h in hits]
    pool_graph = edges_among(bank, pool_ids, params.query)
    plan = fold_pool(pool_ids, pool_graph.edges, params.limit)
    # Refills are the pool's tail: only those that clear the relevance floor take a slot.
    kept = [
        r
        for r in plan.results
        if r.position <= params.limit or (by_id[r.entry_id].relevance or 0.0) >= floor
    ]
    stats.groups = plan.groups
    stats.folded = sum(len(r.related) for r in kept)
    stats.refilled = sum(1 for r in kept if r.position > params.limit)
    stats.refills_below_floor = len(plan.results) - len(kept)
    shown = [r.entry_id for r in kept]
    for r in kept:
        shown += [f.entry_id for f in r.related] + [f.via["id"] for f in r.related if f.via]
    entries = _entries(shown)
    expand = set(params.expand or ())
    results = []
    for i, folded in enumerate(kept, start=1):
        item = _result(entries[folded.entry_id], by_id[folded.entry_id], i, floor, high)
        item.related = _related(folded, by_id, entries, expand)
        results.append(item)
    attach_links(results, pool_graph.edges, {pk: e.short_id for pk, e in entries.items()})
    history = params.history if params.history is not None else asks_for_history(params.query)
    if not history:
        stats.ranked_after_corrector = order_corrections(results)
    selection = neighbors_of(
        bank,
        [r.entry_id for r in results],  # answer order: hop lines go to the first results
        pool_ids,
        params.neighbors,
        query=params.query,
        query_vector=query_vector,
        floor=neighbor_floor if neighbor_floor > 0 else None,
        expand=sorted(expand),
        replacement_types=pool_graph.replacement_types,
        correction_types=pool_graph.correction_types,
    )
    _attach_selection(results, selection, stats)
    return results, [r.entry_id for r in kept]


def _related(folded, by_id, entries, expand: set[str]) -> list[Pointer]:
    """A result's folded pointers in order of relevance to the query (the member's own, plus
    its note's): the first pointer an agent reads is the one that matters."""
    members = sorted(
        folded.related,
        key=lambda f: -((by_id[f.entry_id].relevance or 0.0) + NOTE_WEIGHT * f.note_relevance),
    )
    pointers = []
    for f in members:
        member = entries[f.entry_id]
        pointer = _pointer(member, "folded", f.relation, f.direction, f.note)
        if f.via is not None:
            pointer.via = {**f.via, "id": entries[f.via["id"]].short_id}
        if member.short_id in expand:
            pointer.content = member.content
        pointers.append(pointer)
    return pointers


def _attach_selection(results: list[AnswerResult], selection, stats: QueryStats) -> None:
    """Neighbours, hop lines and correctors (the neighbour statement's rows) onto results."""
    row_of = {item.entry_id: i for i, item in enumerate(results)}
    stats.neighbor_cap_reached = len(selection.capped)
    stats.hops_cut = selection.hops_cut
    for hop in selection.hops:
        link = Link(hop.short_id, hop.relation, hop.direction, hop.note)
        results[row_of[hop.result_id]].hops.append(link)
    mark_correctors(results, selection.correctors)
    for n in selection.neighbors:
        pointer = Pointer(
            id=n.short_id,
            relation=n.relation,
            direction=n.direction,
            kind="neighbor",
            note=n.note,
            summary=n.summary or n.title,
            title=n.title,
            status=n.status,
            steps=n.steps or None,
            replacement=bool(n.pinned),
            content=n.content,
        )
        results[row_of[n.result_id]].neighbors.append(pointer)


def present_and_record(
    bank: Bank,
    answer: QueryAnswer,
    params: QueryParams,
    *,
    actor: str = "",
    record: bool = True,
    counter: TokenCounter = DEFAULT_COUNTER,
) -> dict:
    """Render the answer as the agent receives it, then (``record``) count usage of what was
    shown and log the query, in one statement."""
    body = present_answer(answer, counter)
    if record:
        shown = {r["id"] for r in body["results"]}
        record_query(
            bank,
            actor,
            params,
            used=[r.entry_id for r in answer.results if r.id in shown],
            results=body["results"],
            took_ms=body["stats"]["took_ms"],
        )
    return body


def run_query(
    bank: Bank,
    params: QueryParams,
    *,
    actor: str = "",
    record: bool = True,
    query_vector: list[float] | None = None,
    counter: TokenCounter = DEFAULT_COUNTER,
) -> dict:
    """Answer a query as API.md's response body, in process on ready params (what
    :class:`graph.actions.query.QueryAction` runs after validating a request). Usage is bumped
    for the returned ids only and the query is logged — unless ``record`` is false (replays and
    labs measure, never count)."""
    answer = execute_query(bank, params, query_vector=query_vector)
    return present_and_record(bank, answer, params, actor=actor, record=record, counter=counter)


_LOG_INSERT = f"""
INSERT INTO {QueryLog._meta.db_table}
       (bank_id, actor, query, params, result_ids, pointer_ids, neighbor_ids, took_ms, created_at)
SELECT %(bank)s, %(actor)s, %(query)s, %(params)s::jsonb, %(result_ids)s::jsonb,
       %(pointer_ids)s::jsonb, %(neighbor_ids)s::jsonb, %(took_ms)s, %(now)s
  FROM relaxed
"""


def record_query(
    bank: Bank, actor: str, params: QueryParams, *, used: list[int], results: list[dict], took_ms
) -> None:
    """What a query hands out, in one statement: usage bumped for ``used`` (the returned
    results' entry ids, API.md step 8) and the query log row; committed without waiting for a
    WAL flush when it runs on its own (kb.services.usage.relaxed_commit_cte)."""
    now = timezone.now()
    values = {
        "bank": bank.pk,
        "actor": actor,
        "query": params.query,
        "params": json.dumps({k: v for k, v in asdict(params).items() if k != "query"}),
        "result_ids": json.dumps([r["id"] for r in results]),
        "pointer_ids": json.dumps([p["id"] for r in results for p in r["related"]]),
        "neighbor_ids": json.dumps([p["id"] for r in results for p in r["neighbors"]]),
        "took_ms": took_ms,
        "now": now,
        "used_ids": list(used),
        "used_at": now,
    }
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {relaxed_commit_cte()}, {USAGE_CTE}{_LOG_INSERT}", values)
