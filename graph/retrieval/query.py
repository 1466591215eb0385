"""The query service behind ``POST /api/v1/banks/{bank}/query``: flat ranking from kb, then
(by default) the fold over the graph. The fold adds exactly two SQL statements to a flat
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
    asks_for_history,
    attach_links,
    confidence_band,
    floors,
    order_corrections,
)
from graph.retrieval.budget import (
    DEFAULT_BUDGET_FLOOR,
    DEFAULT_BUDGET_PER_RESULT,
    bound_fields,
    fit_budget,
    settle_tokens,
)
from graph.retrieval.fold import edges_among, fold_pool, neighbors_of
from graph.retrieval.relevance import NOTE_WEIGHT
from kb.inputs import check_known
from kb.models import Bank, Entry, EntryStatus
from kb.presenters import entry_core
from kb.services.embedding import QueryVector, embed_query
from kb.services.entries import kinds_for_bank
from kb.services.search import rank_candidates
from kb.services.usage import USAGE_CTE, relaxed_commit_cte


@dataclass
class QueryParams:
    query: str
    limit: int = 8
    fold: bool = True
    pool: int = 20
    neighbors: int = 3
    lexical: bool = False
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


def _result_item(entry: Entry, hit, rank: int, floor: float, high: float) -> dict:
    item = entry_core(entry)
    item.update(
        {
            "score": round(hit.score, 4),
            "rank": rank,
            "matched_by": hit.matched_by,
            "lifecycle": lifecycle_note(entry),
            "relevance": round(hit.relevance or 0.0, 4),
            "confidence": confidence_band(hit.relevance, floor, high),
            "truncated": False,
            "related": [],
            "neighbors": [],
        }
    )
    return item


def _pointer(entry: Entry, kind: str, relation: str, direction: str, note: str) -> dict:
    item = {
        "id": entry.short_id,
        "relation": relation,
        "direction": direction,
        "kind": kind,
        "note": note,
        "summary": entry.summary or entry.title,
        "title": entry.title,
        "status": entry.status,
    }
    if entry.steps:
        item["steps"] = entry.steps  # playbooks come back whole wherever they appear
    return item


def _budget(bank: Bank, params: QueryParams) -> int:
    if params.budget_tokens is not None:
        return params.budget_tokens
    per_result = int(bank.setting("budget_tokens_per_result", DEFAULT_BUDGET_PER_RESULT))
    # The envelope (query, stats) costs about 150 tokens whatever the limit: a small limit
    # gets a floor, so the default never cuts the only result away.
    return max(per_result * params.limit, DEFAULT_BUDGET_FLOOR)


def run_query(
    bank: Bank,
    params: QueryParams,
    *,
    actor: str = "",
    record: bool = True,
    query_vector: list[float] | None = None,
) -> dict:
    """Answer a query as API.md's response body. Usage is bumped for the returned ids only and
    the query is logged — unless ``record`` is false (replays and labs measure, never count)."""
    started = time.perf_counter()
    if params.kinds:
        check_known("kinds", params.kinds, kinds_for_bank(bank), what="kind(s)")
    floor, high, neighbor_floor = floors(bank)
    expand = set(params.expand or ())
    pool_size = max(params.pool, params.limit) if params.fold else params.limit
    if query_vector is None:
        query_vector = embed_query(params.query)
    elif not isinstance(query_vector, QueryVector):
        query_vector = QueryVector(query_vector)  # the search and the fold share its text
    hits = rank_candidates(
        bank,
        params.query,
        limit=pool_size,
        lexical=params.lexical,
        kinds=params.kinds,
        systems=params.systems,
        include_retired=params.include_retired,
        query_vector=query_vector,
    )
    by_id = {h.entry_id: h for h in hits}
    entries = Entry.objects.select_related("kind").in_bulk(list(by_id))
    pool_ids = [h.entry_id for h in hits]

    results: list[dict] = []
    stats = {"pool": len(hits), "groups": len(hits), "folded": 0, "refilled": 0, "neighbors": 0}
    stats.update(neighbor_cap_reached=0, refills_below_floor=0, ranked_after_corrector=0)
    if not params.fold:
        for i, hit in enumerate(hits[: params.limit], start=1):
            results.append(_result_item(entries[hit.entry_id], hit, i, floor, high))
        returned = pool_ids[: params.limit]
        attach_links(results, returned, [], {})
    else:
        pool_graph = edges_among(bank, pool_ids, params.query)
        pool_edges = pool_graph.edges
        plan = fold_pool(pool_ids, pool_edges, params.limit)
        # Refills are the pool's tail: only those that clear the relevance floor take a slot.
        kept = [
            r
            for r in plan.results
            if r.position <= params.limit or (by_id[r.entry_id].relevance or 0.0) >= floor
        ]
        stats.update(
            groups=plan.groups,
            folded=sum(len(r.related) for r in kept),
            refilled=sum(1 for r in kept if r.position > params.limit),
            refills_below_floor=len(plan.results) - len(kept),
        )
        returned = [r.entry_id for r in kept]
        for i, folded in enumerate(kept, start=1):
            item = _result_item(entries[folded.entry_id], by_id[folded.entry_id], i, floor, high)
            # Pointers in order of relevance to the query (the member's own, plus its note's),
            # then pool rank: the first pointer an agent reads is the one that matters.
            related = sorted(
                folded.related,
                key=lambda f: (
                    -((by_id[f.entry_id].relevance or 0.0) + NOTE_WEIGHT * f.note_relevance)
                ),
            )
            for f in related:
                member = entries[f.entry_id]
                pointer = _pointer(member, "folded", f.relation, f.direction, f.note)
                pointer["via"] = None
                if f.via is not None:
                    pointer["via"] = {**f.via, "id": entries[f.via["id"]].short_id}
                if member.short_id in expand:
                    pointer["content"] = member.content
                item["related"].append(pointer)
            results.append(item)
        attach_links(results, returned, pool_edges, {pk: e.short_id for pk, e in entries.items()})
        history = params.history if params.history is not None else asks_for_history(params.query)
        if not history:
            stats["ranked_after_corrector"] = order_corrections(results)
        position = {item["id"]: i for i, item in enumerate(results)}
        row_of = {entry_id: position[entries[entry_id].short_id] for entry_id in returned}
        selection = neighbors_of(
            bank,
            returned,
            pool_ids,
            params.neighbors,
            query=params.query,
            query_vector=query_vector,
            floor=neighbor_floor if neighbor_floor > 0 else None,
            expand=sorted(expand),
            replacement_types=pool_graph.replacement_types,
        )
        stats["neighbor_cap_reached"] = len(selection.capped)
        for n in selection.neighbors:
            pointer = {
                "id": n.short_id,
                "relation": n.relation,
                "direction": n.direction,
                "kind": "neighbor",
                "note": n.note,
                "summary": n.summary or n.title,
                "title": n.title,
                "status": n.status,
            }
            if n.steps:
                pointer["steps"] = n.steps
            if n.pinned:
                pointer["replacement"] = True
            if n.content is not None:
                pointer["content"] = n.content
            results[row_of[n.result_id]]["neighbors"].append(pointer)

    if params.compact:
        for item in results:
            if item["content"]:
                item["content"], item["truncated"] = "", True
    for item in results:
        bound_fields(item)
    body = {
        "bank": bank.slug,
        "query": params.query,
        "fold": params.fold,
        "no_good_match": not any((by_id[pk].relevance or 0.0) >= floor for pk in returned),
        "results": results,
        "stats": stats,
    }
    budget = _budget(bank, params)
    # Placeholders as wide as the final figures, so filling them in cannot break the budget.
    stats.update(tokens=budget, budget_tokens=budget, took_ms=99999.9, neighbors=99999)
    stats.update(contents_cut=99999, results_cut=99999)
    stats.update(pointers_compacted=99999, dropped_pointers=99999)
    stats.update(fit_budget(body, budget))
    stats["neighbors"] = sum(len(r["neighbors"]) for r in results)
    took_ms = round((time.perf_counter() - started) * 1000, 1)
    stats["took_ms"] = took_ms
    settle_tokens(body, stats)  # the figure is part of what it counts
    returned_short = [r["id"] for r in results]
    if record:
        shown = set(returned_short)
        record_query(
            bank,
            actor,
            params,
            used=[pk for pk in returned if entries[pk].short_id in shown],
            results=results,
            took_ms=took_ms,
        )
    return body


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
