"""Flat search: weighted cosine across dimensions, an optional lexical arm, kind weights and
lifecycle multipliers (``002_*``). Candidates come from the HNSW indexes (one per dimension)
and the full-text / trigram indexes; every candidate is then scored exactly.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.utils import timezone

from kb.models import (
    DEFAULT_KIND_WEIGHT_SCALE,
    DEFAULT_LEXICAL_WEIGHT,
    Bank,
    Entry,
    EntryStatus,
)
from kb.prepared import fetch_prepared, pipelined, send_prepared
from kb.services.embedding import embed_query, vector_literal

RETIRED_MULTIPLIER = 0.35
CANCELLED_MULTIPLIER = 0.15
DONE_FRESH_MULTIPLIER = 0.6
DONE_DECAYED_MULTIPLIER = 0.2
DONE_DECAY_DAYS = 90
MIN_KIND_FACTOR = 0.05


def lifecycle_multiplier(
    status: str, status_changed_at: dt.datetime | None, expires_at: dt.date | None, now: dt.datetime
) -> float:
    """Downrank, never exclude: retired ×0.35, done ×0.6 fading to 0.2 over 90 days,
    cancelled ×0.15; an entry past its ``expires_at`` counts as retired."""
    if status == EntryStatus.RETIRED or (expires_at is not None and expires_at < now.date()):
        return RETIRED_MULTIPLIER
    if status == EntryStatus.CANCELLED:
        return CANCELLED_MULTIPLIER
    if status == EntryStatus.DONE:
        age_days = max(0.0, (now - (status_changed_at or now)).total_seconds() / 86400)
        fade = max(0.0, 1.0 - age_days / DONE_DECAY_DAYS)
        return DONE_DECAYED_MULTIPLIER + (DONE_FRESH_MULTIPLIER - DONE_DECAYED_MULTIPLIER) * fade
    return 1.0


def kind_factor(weight: float, scale: float) -> float:
    return max(MIN_KIND_FACTOR, 1.0 + scale * weight)


@dataclass
class ScoredEntry:
    entry_id: int
    score: float
    relevance: float
    vector_score: float | None
    lexical_score: float | None
    matched_by: list[str] = field(default_factory=list)
    rank: int = 0


@dataclass
class SearchResult:
    hits: list[ScoredEntry]
    entries: dict[int, Entry]
    took_ms: float


# Each large bank has HNSW indexes of its own (partial, ``WHERE bank_id = <bank>``, built by
# kb.services.vector_index once it holds KB_BANK_VECTOR_INDEX_AT vectors); the statement names
# the bank as a literal (written into its text, see _statement) so the planner uses them. A
# bank without one is scanned exactly (its own rows only, through the bank_id index), which is
# also the fallback while one is built.
# Rows without a vector in the dimension are dropped *after* the LIMIT: an HNSW index holds no
# NULLs, so they never come out of it, while a filter inside made the planner expect few rows
# for a sparsely filled dimension (useful_for, context) and scan the whole bank instead; on an
# exact scan NULL distances sort last, so the same k vectors remain.
_VECTOR_ARM = """
    (SELECT entry_id FROM (SELECT entry_id, {dim} FROM kb_entryembedding
      WHERE bank_id = %(bank)s ORDER BY {dim} <=> %(vec)s::vector LIMIT %(k)s) arm
      WHERE arm.{dim} IS NOT NULL)
"""

# A compound word (``lockout/tagout``, ``config.yaml``, ``kb.services.search``) is one token
# to PostgreSQL's parser; the entries' ``search_tsv`` also holds its parts (kb migration
# 0018), and the query matches any reading: as written, with its own compounds split, or
# with them written closed.
_COMPOUND_JOINT = re.compile(r"(\w)[/.:\\_-]+(?=\w)")


def compound_parts(query: str, *, closed: bool = False) -> str:
    """The query with its compounds split into their words ("lockout/tagout" -> "lockout
    tagout"), or written closed ("lock-out" -> "lockout"); a leading ``-`` (websearch
    negation) or a quoted phrase is left as it is."""
    return _COMPOUND_JOINT.sub(r"\1" if closed else r"\1 ", query)


# Full text ranks at most LEXICAL_SCAN matches (a very common word cannot make it rank the
# whole bank); trigram similarity on titles runs only when full text found few matches, with
# the threshold raised from pg_trgm's 0.3 so the index returns few rows to recheck.
LEXICAL_SCAN = 2000
TRIGRAM_THRESHOLD = 0.45
# A title reaches similarity TRIGRAM_THRESHOLD with a query of q distinct trigrams only if it
# has at most q / TRIGRAM_THRESHOLD of its own. Titles of at most 16 and 40 trigrams have
# indexes of their own (kb migration 0022); a query short enough that no longer title can
# match it reads the smallest such index: the whole-title index hands a one-word query every
# title sharing half its trigrams, each fetched only to be rejected (364 ms against 1 ms for
# "data" at 100k entries). (title trigrams at most, query trigrams at most) per tier.
TITLE_TRIGRAM_TIERS = tuple((k, int(k * TRIGRAM_THRESHOLD)) for k in (16, 40))
_LEXICAL_STATEMENT = """
WITH ft AS (
    SELECT m.id AS entry_id, ts_rank_cd(m.search_tsv, m.q) AS ts
      FROM (SELECT e.id, e.search_tsv, tq.q
              FROM kb_entry e,
                   (SELECT websearch_to_tsquery('english', %(text)s)
                           || websearch_to_tsquery('english', %(text_parts)s)
                           || websearch_to_tsquery('english', %(text_closed)s)) AS tq(q)
             WHERE e.bank_id = %(bank)s AND e.search_tsv @@ tq.q
             LIMIT %(lexical_scan)s) m
     ORDER BY ts DESC
     LIMIT %(k)s
),
tg AS (
    SELECT t.entry_id, t.trg FROM ({title_tiers}) AS t
     ORDER BY t.trg DESC
     LIMIT %(k)s
)
SELECT coalesce(ft.entry_id, tg.entry_id) AS entry_id, ft.ts, tg.trg
  FROM ft FULL JOIN tg ON tg.entry_id = ft.entry_id
"""
# One branch per tier and one for longer queries; the query's own trigram count picks the one
# that runs (a one-time filter: the others read nothing).
_TITLE_TIER = """
    SELECT e.id AS entry_id, similarity(e.title, %(text)s) AS trg
      FROM kb_entry e
     WHERE e.bank_id = %(bank)s
       AND e.title %% %(text)s{title_bound}
       AND {query_trigrams}
       AND similarity(e.title, %(text)s) >= %(trigram_threshold)s
       AND (SELECT count(*) FROM ft) < 10
"""


def _title_tiers() -> str:
    """The trigram arm's branches, the tiers' bounds written in (so each branch's own partial
    index applies to it)."""
    count, branches, above = "cardinality(show_trgm(%(text)s))", [], -1
    for title_at_most, query_at_most in TITLE_TRIGRAM_TIERS:
        branches.append(
            _TITLE_TIER.format(
                title_bound=f"\n       AND cardinality(show_trgm(e.title)) <= {title_at_most}",
                query_trigrams=f"{count} BETWEEN {above + 1} AND {query_at_most}",
            )
        )
        above = query_at_most
    branches.append(_TITLE_TIER.format(title_bound="", query_trigrams=f"{count} > {above}"))
    return " UNION ALL ".join(branches)


_LEXICAL_STATEMENT = _LEXICAL_STATEMENT.replace("{title_tiers}", _title_tiers())


# The statement is prepared on the server (kb/prepared.py: parsed and planned once per
# connection, the query vector sent once as a parameter instead of six times in the text) with
# three integers written into its text: the bank, so the planner can prove the bank's partial
# HNSW indexes apply (a parameter cannot: the session plans prepared statements generically),
# and the arms' LIMITs, so the generic plan knows how few rows they return. Each (bank, shape)
# is one statement per connection (psycopg keeps the last 100; the LIMITs follow pool and limit,
# so a caller varying them widely re-prepares: what every query cost before). The lexical arm
# is a statement of its own, prepared the same way, so that it runs while the model does
# (rank_and_embed); the search statement takes its ids as a parameter.


@functools.lru_cache(maxsize=256)
def _statement(
    lexical: bool, filters: tuple[str, ...], bank: int, k: int, lexical_scan: int
) -> str:
    """The search statement (``lexical``: the lexical arm's) for one bank and shape, its
    integers written in."""
    sql = _LEXICAL_STATEMENT if lexical else _build_sql(list(filters))
    for name, value in (("bank", bank), ("k", k), ("lexical_scan", lexical_scan)):
        sql = sql.replace(f"%({name})s", str(int(value)))
    return sql


# When its status changed matters only to a done entry's multiplier (lifecycle_multiplier):
# other rows send NULL, so the ~80 candidates do not each cost a timestamp to decode.
_CHANGED_AT = f"CASE WHEN e.status = '{EntryStatus.DONE.value}' THEN e.status_changed_at END"


def _build_sql(filters: list[str]) -> str:
    arms = " UNION ".join(_VECTOR_ARM.format(dim=d) for d in ("content", "useful_for", "context"))
    parts = [f"WITH vc AS ({arms}),"]
    parts.append("lx AS (SELECT unnest(%(lexical_ids)s::bigint[]) AS entry_id),")
    parts.append("cand AS (SELECT entry_id FROM vc UNION SELECT entry_id FROM lx)")
    sims = (
        ", ".join(
            f"CASE WHEN emb.{d} IS NULL THEN NULL ELSE 1 - (emb.{d} <=> %(vec)s::vector) END"
            for d in ("content", "useful_for", "context")
        )
        + ","
    )
    where = " AND ".join(
        ["e.bank_id = %(bank)s", "e.status NOT IN ('merged', 'deleted')", *filters]
    )
    parts.append(
        f"""
SELECT e.id, {sims}
       (vc.entry_id IS NOT NULL) AS in_vc,
       k.weight, e.status, {_CHANGED_AT}, e.expires_at
  FROM cand
  JOIN kb_entry e ON e.id = cand.entry_id
  JOIN kb_entrykind k ON k.id = e.kind_id
  LEFT JOIN kb_entryembedding emb ON emb.entry_id = e.id
  LEFT JOIN (SELECT DISTINCT entry_id FROM vc) vc ON vc.entry_id = e.id
 WHERE {where}
"""
    )
    return "\n".join(parts)


def _search_params(
    limit: int,
    kinds: Sequence[str] | None,
    systems: Sequence[str] | None,
    include_retired: bool,
    now: dt.datetime,
) -> tuple[dict, list[str]]:
    """The search statement's parameters but the vector and the lexical ids, and its
    filters."""
    filters: list[str] = []
    params: dict = {"lexical_scan": LEXICAL_SCAN}
    if kinds:
        filters.append("k.name = ANY(%(kinds)s)")
        params["kinds"] = list(kinds)
    if systems:
        filters.append("e.systems && %(systems)s::varchar[]")
        params["systems"] = list(systems)
    if not include_retired:
        filters.append("e.status <> 'retired'")
        filters.append("(e.expires_at IS NULL OR e.expires_at >= %(today)s)")
        params["today"] = now.date()
    # Filters run after candidate generation, so widen the candidate arms when they apply.
    params["k"] = max(limit * 4, 80) * (4 if filters else 1)
    return params, filters


def _lexical_params(query: str) -> dict:
    return {
        "text": query,
        "text_parts": compound_parts(query),
        "text_closed": compound_parts(query, closed=True),
        "trigram_threshold": TRIGRAM_THRESHOLD,
    }


def _scored(
    bank: Bank, rows: list[tuple], lexical: dict[int, tuple], now: dt.datetime
) -> list[ScoredEntry]:
    """Each candidate row scored: bank-weighted cosine, the lexical arm (``lexical``: its
    (full-text rank, title similarity) per entry, the rank normalised by the best among the
    candidates), kind weight and lifecycle multiplier."""
    weights = bank.dimension_weights()
    lexical_weight = bank.setting("lexical_weight", DEFAULT_LEXICAL_WEIGHT)
    scale = bank.setting("kind_weight_scale", DEFAULT_KIND_WEIGHT_SCALE)
    unmatched = (None, None)
    max_ts = max((lexical.get(row[0], unmatched)[0] or 0.0 for row in rows), default=0.0) or 1.0
    dims = (weights["content"], weights["useful_for"], weights["context"])
    hits: list[ScoredEntry] = []
    for entry_id, *sims, in_vc, weight, status, changed, expires in rows:
        num = den = 0.0
        for sim, w in zip(sims, dims, strict=True):
            if sim is not None and w > 0:
                num += w * sim
                den += w
        vector_score = max(0.0, num / den) if den else None
        lexical_score = None
        matched_by = []
        if in_vc and vector_score is not None:
            matched_by.append("vector")
        ts, trg = lexical.get(entry_id, unmatched)
        if ts is not None or trg is not None:
            lexical_score = max((ts or 0.0) / max_ts, trg or 0.0)
            matched_by.append("lexical")
        relevance = (vector_score or 0.0) + (
            lexical_weight * lexical_score if lexical_score else 0.0
        )
        score = (
            relevance
            * kind_factor(weight, scale)
            * lifecycle_multiplier(status, changed, expires, now)
        )
        hits.append(
            ScoredEntry(
                entry_id, round(score, 6), relevance, vector_score, lexical_score, matched_by
            )
        )
    return hits


def rank_candidates(bank: Bank, query: str, *, limit: int, **options) -> list[ScoredEntry]:
    """The top ``limit`` entries of ``bank`` for ``query``, best first, scored and ranked
    (:func:`rank_and_embed`'s options)."""
    return rank_and_embed(bank, query, limit=limit, **options)[0]


def rank_and_embed(
    bank: Bank,
    query: str,
    *,
    limit: int,
    lexical: bool = False,
    kinds: Sequence[str] | None = None,
    systems: Sequence[str] | None = None,
    include_retired: bool = True,
    query_vector: Sequence[float] | None = None,
) -> tuple[list[ScoredEntry], Sequence[float]]:
    """:func:`rank_candidates`, and the query's vector (``query_vector``, else the model's).

    Reads nothing but the ranking: the lexical arm's statement, sent before the model runs
    and read after it (pipeline mode: PostgreSQL matches the words on one core while the
    model runs on the other), then the search statement, which scores the vector arms'
    candidates and the lexical arm's together.
    """
    now = timezone.now()
    params, filters = _search_params(limit, kinds, systems, include_retired, now)
    literals = (bank.pk, params.pop("k"), params.pop("lexical_scan"))
    lexical_rows = []
    with pipelined() if lexical else contextlib.nullcontext():
        if lexical:
            sent = send_prepared(_statement(True, (), *literals), _lexical_params(query))
        vector = query_vector if query_vector is not None else embed_query(query)
        if lexical:
            lexical_rows = sent.rows()
    scores = {entry_id: (ts, trg) for entry_id, ts, trg in lexical_rows}
    params["vec"] = vector_literal(vector)
    params["lexical_ids"] = list(scores)
    rows = fetch_prepared(_statement(False, tuple(filters), *literals), params)
    hits = _scored(bank, rows, scores, now)
    hits.sort(key=lambda h: (-h.score, h.entry_id))
    hits = hits[:limit]
    for i, hit in enumerate(hits, start=1):
        hit.rank = i
    return hits, vector


def search_entries(bank: Bank, query: str, *, limit: int = 8, **options) -> SearchResult:
    """Flat search: the ranked hits and their entries (two SQL statements)."""
    started = time.perf_counter()
    hits = rank_candidates(bank, query, limit=limit, **options)
    entries = (
        Entry.objects.select_related("kind", "resolved_by")
        .order_by()
        .in_bulk([h.entry_id for h in hits])
    )
    return SearchResult(hits, entries, (time.perf_counter() - started) * 1000)
