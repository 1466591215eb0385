"""Shaping a fold answer for an agent (issue 16): relations between the returned results,
corrections ranked after their correctors, confidence bands, bounded text and a token budget.

Everything here works on what the fold already read (the pool's edges, the hits' relevance),
so none of it adds a statement.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from graph.retrieval.fold import PoolEdge
from kb.models import Bank

# --- relations between results -------------------------------------------------------------

# A result corrected or superseded by another returned result says so and ranks after it.
CORRECTION_FIELDS = {"corrects": "corrected_by", "supersedes": "superseded_by"}
_HISTORY = re.compile(
    r"\b(history|historical|previous(ly)?|formerly|originally|used to|old(er)? (version|way|"
    r"approach|decision|behaviou?r)|earlier (version|approach|decision)|deprecated|legacy|"
    r"superseded|outdated|obsolete|what changed|changelog|back then|at the time)\b",
    re.IGNORECASE,
)


def asks_for_history(query: str) -> bool:
    """Does the question ask about the past (then a corrected entry keeps its own rank)?"""
    return bool(_HISTORY.search(query))


def attach_links(
    results: list[dict], returned: Sequence[int], edges: Sequence[PoolEdge], short: dict[int, str]
) -> None:
    """Give every result ``links`` (each current edge to another returned result, seen from this
    result) and ``corrected_by`` / ``superseded_by`` (a returned result that corrects or
    supersedes it, the best-ranked one when several do)."""
    position = {entry_id: i for i, entry_id in enumerate(returned)}
    for item in results:
        item["links"] = []
        for name in CORRECTION_FIELDS.values():
            item[name] = None
    for e in sorted(edges, key=lambda e: e.id):
        if e.source not in position or e.target not in position or e.source == e.target:
            continue
        src, dst = results[position[e.source]], results[position[e.target]]
        src["links"].append(
            {"id": short[e.target], "relation": e.relation, "direction": "out", "note": e.note}
        )
        dst["links"].append(
            {"id": short[e.source], "relation": e.relation, "direction": "in", "note": e.note}
        )
        field = CORRECTION_FIELDS.get(e.relation)
        if field:
            current = dst[field]
            if current is None or position[e.source] < _position_of(results, current):
                dst[field] = short[e.source]


def _position_of(results: list[dict], short_id: str) -> int:
    return next(i for i, r in enumerate(results) if r["id"] == short_id)


def order_corrections(results: list[dict]) -> int:
    """Move each corrected or superseded result to just after the result that corrects it
    (stable otherwise; a cycle of corrections is left as ranked). Returns how many moved."""
    moved = 0
    for _ in range(len(results)):
        changed = False
        for i, item in enumerate(results):
            by = item.get("corrected_by") or item.get("superseded_by")
            if not by:
                continue
            j = _position_of(results, by)
            if j > i:
                corrector = results[j]
                if (corrector.get("corrected_by") or corrector.get("superseded_by")) == item["id"]:
                    continue  # a cycle: neither ranks after the other
                results.insert(j, results.pop(i))
                moved += 1
                changed = True
                break
        if not changed:
            break
    for rank, item in enumerate(results, start=1):
        item["rank"] = rank
    return moved


# --- confidence -------------------------------------------------------------------------------

# Measured with the MiniLM default on labelled questions (README, "Numbers" under the crowded hop): the
# relevance (weighted cosine, plus the lexical arm when on) of the best answer to questions
# the bank can answer sits above these; of questions it cannot answer, below.
DEFAULT_RELEVANCE_FLOOR = 0.40
DEFAULT_CONFIDENCE_HIGH = 0.55
DEFAULT_NEIGHBOR_FLOOR = 0.0


def floors(bank: Bank) -> tuple[float, float, float]:
    """(relevance floor, high-confidence line, neighbour floor) of the bank's settings."""
    floor = bank.setting("relevance_floor", DEFAULT_RELEVANCE_FLOOR)
    high = max(floor, bank.setting("confidence_high", DEFAULT_CONFIDENCE_HIGH))
    return floor, high, bank.setting("neighbor_relevance_floor", DEFAULT_NEIGHBOR_FLOOR)


def confidence_band(relevance: float | None, floor: float, high: float) -> str:
    if relevance is None or relevance < floor:
        return "low"
    return "high" if relevance >= high else "medium"


# --- economy: bounded text and a token budget ---------------------------------------------

CHARS_PER_TOKEN = 4
MARKER = " …[truncated]"
MIN_BUDGET_TOKENS = 200
DEFAULT_BUDGET_PER_RESULT = 250  # tokens: the default answer of 8 results fits 2,000
DEFAULT_BUDGET_FLOOR = 800  # tokens: the least a default budget allows (limits of 1–3)
CONTENT_FLOOR = 280  # characters of content kept before content goes entirely
FIELD_LIMITS = {"title": 300, "summary": 400, "useful_for": 400, "note": 400, "content": 20_000}


def estimate_tokens(body: object) -> int:
    """Tokens of a JSON body as an agent receives it (characters / 4, rounded up)."""
    return -(-len(json.dumps(body, ensure_ascii=False)) // CHARS_PER_TOKEN)


def cut(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[: max(0, limit - len(MARKER))].rstrip() + MARKER, True


def bound_fields(item: dict) -> None:
    """Cap every text field of a result or pointer; cut content sets ``truncated``."""
    for name, limit in FIELD_LIMITS.items():
        value = item.get(name)
        if isinstance(value, str):
            item[name], was_cut = cut(value, limit)
            if was_cut and name == "content":
                item["truncated"] = True
    for sub in ("related", "neighbors", "links"):
        for pointer in item.get(sub) or ():
            bound_fields(pointer)


def _size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False))


def _shorten(item: dict, keep: int, excess_chars: int) -> int:
    """Cut ``item``'s content towards ``keep`` characters; returns the characters saved."""
    content = item.get("content") or ""
    text = (
        content[: -len(MARKER)] if item.get("truncated") and content.endswith(MARKER) else content
    )
    if len(text) <= keep:
        return 0
    new_len = max(keep, len(text) - excess_chars - len(MARKER))
    before = _size(content) + (0 if item.get("truncated") else 6)  # "false" -> "true"
    item["content"] = text[:new_len].rstrip() + MARKER if new_len > 0 else ""
    item["truncated"] = True
    return before - _size(item["content"])


POINTER_TEXT = 160  # characters a pointer's note, summary and title keep under a tight budget


def _trim_pointers(item: dict) -> int:
    saved = 0
    for pointer in (*item.get("related", ()), *item.get("neighbors", ())):
        for name in ("note", "summary", "title"):
            value = pointer.get(name)
            if isinstance(value, str) and len(value) > POINTER_TEXT:
                before = _size(value)
                pointer[name], _ = cut(value, POINTER_TEXT)
                saved += before - _size(pointer[name])
        if pointer.get("summary") and pointer.get("summary") == pointer.get("title"):
            saved += _size(pointer["summary"]) - 2
            pointer["summary"] = ""  # the title already says it
    return saved


def fit_budget(body: dict, budget: int) -> dict:
    """Cut ``body`` until it fits ``budget`` tokens: first the content of results from the
    last up (down to a short head, then entirely, each marked ``truncated``), then pointer
    texts (long notes and summaries shortened, a summary that repeats the title emptied), then
    whole results from the last. The body is serialised a bounded number of times."""
    report = {"contents_cut": 0, "results_cut": 0}
    results = body["results"]
    limit_chars = budget * CHARS_PER_TOKEN
    size = _size(body)
    cut_ids: set[str] = set()
    for keep in (CONTENT_FLOOR, 0):
        for item in reversed(results):
            if size <= limit_chars:
                break
            saved = _shorten(item, keep, size - limit_chars)
            if saved:
                size -= saved
                cut_ids.add(item["id"])
    if size > limit_chars:
        for item in reversed(results):
            size -= _trim_pointers(item)
            if size <= limit_chars:
                break
    report["contents_cut"] = len(cut_ids)
    size = _size(body)  # exact again before dropping whole results
    while results and size > limit_chars:
        size -= _size(results.pop()) + 2
        report["results_cut"] += 1
    while results and estimate_tokens(body) > budget:  # the estimate above is exact but for
        results.pop()  # separators; this never loops more than once in practice
        report["results_cut"] += 1
    return report
