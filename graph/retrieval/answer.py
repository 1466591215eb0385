"""Shaping a fold answer for an agent (issue 16): relations between the returned results,
corrections ranked after their correctors and confidence bands (bounded text and the token
budget are :mod:`graph.retrieval.budget`).

Everything here works on what the fold already read (the pool's edges, the hits' relevance),
so none of it adds a statement.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from graph.retrieval.answer_types import AnswerResult, Link
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
    results: list[AnswerResult], edges: Sequence[PoolEdge], short: dict[int, str]
) -> None:
    """Give every result ``links`` (each current edge to another returned result, seen from this
    result) and ``corrected_by`` / ``superseded_by`` (a returned result that corrects or
    supersedes it, the best-ranked one when several do)."""
    position = {item.entry_id: i for i, item in enumerate(results)}
    for item in results:
        item.links = []
        item.corrected_by = item.superseded_by = None
    for e in sorted(edges, key=lambda e: e.id):
        if e.source not in position or e.target not in position or e.source == e.target:
            continue
        src, dst = results[position[e.source]], results[position[e.target]]
        src.links.append(Link(short[e.target], e.relation, "out", e.note))
        dst.links.append(Link(short[e.source], e.relation, "in", e.note))
        field = CORRECTION_FIELDS.get(e.relation)
        if field == "corrected_by" and not _current(src):
            field = None  # a retired or expired corrector no longer corrects (API.md)
        if field:
            current = getattr(dst, field)
            if current is None or position[e.source] < _position_of(results, current):
                setattr(dst, field, short[e.source])


_NOT_CURRENT = ("merged", "deleted", "retired", "cancelled")


def _current(item: AnswerResult) -> bool:
    """Is the result's entry live and unexpired (what a current corrector must be)?"""
    entry = item.entry
    return entry.status not in _NOT_CURRENT and not entry.is_expired


def _position_of(results: list[AnswerResult], short_id: str) -> int:
    return next((i for i, r in enumerate(results) if r.id == short_id), len(results))


def order_corrections(results: list[AnswerResult]) -> int:
    """Move each corrected or superseded result to just after the result that corrects it
    (stable otherwise; a cycle of corrections is left as ranked). Returns how many moved."""
    moved = 0
    for _ in range(len(results)):
        changed = False
        for i, item in enumerate(results):
            by = item.corrected_by or item.superseded_by
            if not by:
                continue
            j = _position_of(results, by)
            if len(results) > j > i:
                corrector = results[j]
                if (corrector.corrected_by or corrector.superseded_by) == item.id:
                    continue  # a cycle: neither ranks after the other
                results.insert(j, results.pop(i))
                moved += 1
                changed = True
                break
        if not changed:
            break
    for rank, item in enumerate(results, start=1):
        item.rank = rank
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


def confidence_band(
    relevance: float | None, floor: float, high: float, *, exact: bool = False
) -> str:
    """low / medium / high by relevance; an exact lexical hit is never low."""
    if relevance is None or relevance < floor:
        return "medium" if exact else "low"
    return "high" if relevance >= high else "medium"


def is_exact_hit(hit) -> bool:
    """The lexical arm matched the entry exactly: every word of the query in its text (full
    text, AND of the words), or its title close to the whole query (trigram)."""
    return getattr(hit, "lexical_score", None) is not None


# --- fusion -------------------------------------------------------------------------------

ARM_LEADER_RANK = 2  # the fold protects the top two: the lexical arm's best stands among them
LEADER_WINDOW = 40  # candidates ranked even for a smaller answer, so a buried leader is seen


def lift_arm_leaders(hits: list) -> list:
    """The vector arm never buries the lexical arm's exact hit: the best-scored exact lexical
    hit (lifecycle and kind weights included) moves up to rank ``ARM_LEADER_RANK`` when the
    fused score left it lower. The vector arm's best already leads the fused score unless the
    lexical arm outweighs it, and then it stays in the pool. The rest keep their order."""
    out = list(hits)
    lexical = [h for h in out if is_exact_hit(h)]
    if lexical:
        leader = max(lexical, key=lambda h: h.score)
        index = out.index(leader)
        if index >= ARM_LEADER_RANK:
            out.insert(ARM_LEADER_RANK - 1, out.pop(index))
    return out


def mark_correctors(results: list[AnswerResult], correctors: dict[int, list[str]]) -> None:
    """A result with a current corrector carries ``corrected_by`` wherever the corrector is
    (the returned one when attach_links found it), and is never ``high``."""
    for item in results:
        found = correctors.get(item.entry_id) or []
        if item.corrected_by is None and found:
            item.corrected_by = found[0]
        if item.corrected_by is not None and item.confidence == "high":
            item.confidence = "medium"
