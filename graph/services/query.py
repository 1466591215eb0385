"""The query endpoint's service: ranking from kb's flat search, then (with fold) the graph.

Folding over edges arrives with the graph layer; until then every query answers the flat
top ``limit`` in the response shape of API.md, with ``fold`` reporting false.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kb.api.render import entry_core
from kb.models import Bank
from kb.services.search import search_entries
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


def run_query(bank: Bank, params: QueryParams) -> dict:
    """Answer a query as API.md's response body; bumps usage for the returned ids only."""
    started = time.perf_counter()
    result = search_entries(
        bank,
        params.query,
        limit=params.limit,
        lexical=params.lexical,
        kinds=params.kinds,
        systems=params.systems,
        include_retired=params.include_retired,
    )
    results = []
    for hit, entry in result.ordered_entries():
        item = entry_core(entry)
        item.update(
            {
                "score": round(hit.score, 4),
                "rank": hit.rank,
                "matched_by": hit.matched_by,
                "related": [],
                "neighbors": [],
            }
        )
        results.append(item)
    bump_usage(hit.entry_id for hit in result.hits)
    took_ms = (time.perf_counter() - started) * 1000
    return {
        "bank": bank.slug,
        "query": params.query,
        "fold": False,
        "results": results,
        "stats": {
            "pool": len(result.hits),
            "groups": len(result.hits),
            "folded": 0,
            "refilled": 0,
            "neighbors": 0,
            "took_ms": round(took_ms, 1),
        },
    }
