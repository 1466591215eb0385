"""The query service behind ``POST /api/v1/banks/{bank}/query``: flat ranking from kb, then
(by default) the fold over the graph. The fold adds exactly two SQL statements to a flat
query whatever the pool, result or neighbour counts.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from graph.models import QueryLog
from graph.retrieval.fold import edges_among, fold_pool, neighbors_of
from kb.models import Bank, Entry, EntryStatus
from kb.presenters import entry_core
from kb.services.search import rank_candidates
from kb.services.usage import bump_usage


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


def lifecycle_note(entry: Entry) -> str | None:
    """Why a result is downranked, in words (None for a live, unexpired entry)."""
    if entry.status == EntryStatus.RETIRED:
        return f"retired: {entry.retired_reason}" if entry.retired_reason else "retired"
    if entry.is_expired:
        return f"expired on {entry.expires_at.isoformat()}"
    if entry.status in (EntryStatus.DONE, EntryStatus.CANCELLED):
        return entry.status
    return None


def _result_item(entry: Entry, hit, rank: int) -> dict:
    item = entry_core(entry)
    item.update(
        {
            "score": round(hit.score, 4),
            "rank": rank,
            "matched_by": hit.matched_by,
            "lifecycle": lifecycle_note(entry),
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
    pool_size = max(params.pool, params.limit) if params.fold else params.limit
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
    pointer_ids: list[str] = []
    neighbor_ids: list[str] = []
    stats = {"pool": len(hits), "groups": len(hits), "folded": 0, "refilled": 0, "neighbors": 0}
    if not params.fold:
        for i, hit in enumerate(hits[: params.limit], start=1):
            results.append(_result_item(entries[hit.entry_id], hit, i))
        returned = pool_ids[: params.limit]
    else:
        plan = fold_pool(pool_ids, edges_among(bank, pool_ids), params.limit)
        stats.update(groups=plan.groups, folded=plan.folded, refilled=plan.refilled)
        returned = [r.entry_id for r in plan.results]
        for i, folded in enumerate(plan.results, start=1):
            item = _result_item(entries[folded.entry_id], by_id[folded.entry_id], i)
            for f in folded.related:
                pointer = _pointer(entries[f.entry_id], "folded", f.relation, f.direction, f.note)
                pointer["via"] = None
                if f.via is not None:
                    pointer["via"] = {**f.via, "id": entries[f.via["id"]].short_id}
                item["related"].append(pointer)
                pointer_ids.append(pointer["id"])
            results.append(item)
        position = {entry_id: i for i, entry_id in enumerate(returned)}
        for n in neighbors_of(bank, returned, pool_ids, params.neighbors):
            target = results[position[n.result_id]]
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
            target["neighbors"].append(pointer)
            neighbor_ids.append(n.short_id)
        stats["neighbors"] = len(neighbor_ids)

    took_ms = round((time.perf_counter() - started) * 1000, 1)
    stats["took_ms"] = took_ms
    if record:
        bump_usage(returned)
        QueryLog.objects.create(
            bank=bank,
            actor=actor,
            query=params.query,
            params={k: v for k, v in asdict(params).items() if k != "query"},
            result_ids=[r["id"] for r in results],
            pointer_ids=pointer_ids,
            neighbor_ids=neighbor_ids,
            took_ms=took_ms,
        )
    return {
        "bank": bank.slug,
        "query": params.query,
        "fold": params.fold,
        "results": results,
        "stats": stats,
    }
