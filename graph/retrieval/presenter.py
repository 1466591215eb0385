"""The query answer as API.md's JSON (the one presenter REST and MCP send): typed data from
:mod:`graph.retrieval.query` rendered to dicts, every text bounded, then fitted to the token
budget by the ladder of :mod:`graph.retrieval.budget`, counted with the one token counter."""

from __future__ import annotations

import time
from dataclasses import fields

from graph.edges.notes import notes_as_seen
from graph.retrieval.answer_types import AnswerResult, Link, Pointer, QueryAnswer, QueryStats
from graph.retrieval.budget import bound_fields, char_count, fit_budget_sized, settle_tokens
from graph.retrieval.tokens import DEFAULT_COUNTER, TokenCounter
from kb.presenters import entry_core

# The fold's figures are plain numbers: read field by field (``dataclasses.asdict`` deep-copies).
_STATS = tuple(f.name for f in fields(QueryStats))


def pointer_json(pointer: Pointer) -> dict:
    item = {
        "id": pointer.id,
        "relation": pointer.relation,
        "direction": pointer.direction,
        "kind": pointer.kind,
        "note": pointer.note,
        "summary": pointer.summary,
        "title": pointer.title,
        "status": pointer.status,
    }
    if pointer.steps:
        item["steps"] = pointer.steps
    if pointer.kind == "folded":
        item["via"] = pointer.via
    if pointer.replacement:
        item["replacement"] = True
    if pointer.content is not None:
        item["content"] = pointer.content
    return item


def link_json(link: Link) -> dict:
    # Built directly: dataclasses.asdict deep-copies field by field (a hub's hop lines made
    # it a visible share of the presenter's time).
    return {
        "id": link.id,
        "relation": link.relation,
        "direction": link.direction,
        "note": link.note,
    }


def result_json(result: AnswerResult, *, compact: bool = False) -> dict:
    """One result as API.md's JSON, texts bounded (no budget applied)."""
    item = entry_core(result.entry)
    item.update(
        {
            "score": result.score,
            "rank": result.rank,
            "matched_by": result.matched_by,
            "lifecycle": result.lifecycle,
            "relevance": result.relevance,
            "confidence": result.confidence,
            "truncated": False,
            "related": [pointer_json(p) for p in result.related],
            "neighbors": [pointer_json(p) for p in result.neighbors],
            "links": [link_json(link) for link in result.links],
            "corrected_by": result.corrected_by,
            "superseded_by": result.superseded_by,
        }
    )
    if result.hops:
        item["hops"] = [link_json(hop) for hop in result.hops]
    if compact and item["content"]:
        item["content"], item["truncated"] = "", True
    notes_as_seen([item])  # system notes read from this result's end (graph/edges/notes.py)
    bound_fields(item)
    return item


def present_answer(answer: QueryAnswer, counter: TokenCounter = DEFAULT_COUNTER) -> dict:
    """The response body: results rendered, then cut to ``answer.budget_tokens`` (API.md
    "Agent-grade additions"); ``stats.tokens`` is the count of the body it sits in."""
    results = [result_json(r, compact=answer.compact) for r in answer.results]
    stats = {name: getattr(answer.stats, name) for name in _STATS}
    stats["neighbors"] = 0
    body = {
        "bank": answer.bank,
        "query": answer.query,
        "fold": answer.fold,
        "no_good_match": answer.no_good_match,
        "results": results,
        "stats": stats,
    }
    budget = answer.budget_tokens
    # Placeholders as wide as the final figures, so filling them in cannot break the budget.
    stats.update(tokens=budget, budget_tokens=budget, took_ms=99999.9, neighbors=99999)
    stats.update(contents_cut=99999, results_cut=99999, hops_cut=max(stats["hops_cut"], 99999))
    stats.update(pointers_compacted=99999, dropped_pointers=99999)
    report, size = fit_budget_sized(body, budget, counter)
    placeholders = char_count(stats)
    stats.update(report)
    stats["hops_cut"] = answer.stats.hops_cut + report.get("hops_cut", 0)
    stats["neighbors"] = sum(len(r["neighbors"]) for r in results)
    stats["took_ms"] = round((time.perf_counter() - answer.started) * 1000, 1)
    # The body's size follows from the fitted size and the stats' new figures (no rendering
    # of the whole body again); the token figure is part of what it counts.
    settle_tokens(body, stats, counter, size=size + char_count(stats) - placeholders)
    return body
