"""Query relevance of entries the fold did not rank itself: neighbours and folded pointers.

A neighbour's relevance is the bank's weighted cosine of its own vectors against the query
vector the search already computed, plus ``NOTE_WEIGHT`` times the full-text rank of the edge's
note against the query's words (normalised into [0, 1)), plus ``NOTE_VECTOR_WEIGHT`` times the
cosine of the edge's fact vector (``EdgeEmbedding``, where computed) against the query. Both are computed inside the fold's
own statements, so relevance costs no extra round trip.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kb.models import DEFAULT_DIMENSION_WEIGHTS, Bank
from kb.services.embedding import vector_literal

NOTE_WEIGHT = 0.5
# The edge's fact vector (``EdgeEmbedding``: ends, relation and note) against the query vector,
# added to the neighbour's own weighted cosine; tuned on the hop lab (README, "Hop lines").
NOTE_VECTOR_WEIGHT = 0.5
# Further noted edges handed over per result as hop lines (API.md "Changes": at most 12), for
# the first ``HOP_RESULTS`` results of the answer only (issue 21: "the agent sees every noted
# edge of the first results"): under the default budget the ladder cut the hop lines of later
# results first anyway, and reading them cost every query (README, "Hop lines for the first
# results").
HOP_LINES = 12
HOP_RESULTS = 3
# Relevance is compared in bands this wide; inside one band the note, then the edge type's
# neighbour priority decide, so near-ties do not hide a noted correction behind a bare link.
RELEVANCE_BAND = 0.02
# Candidates read per result and direction on the way to the neighbour slots: a hub with
# 20,000 edges costs at most this many rows (noted edges first, newest first; index order).
NEIGHBOR_CANDIDATE_CAP = 48
DIMENSIONS = ("content", "useful_for", "context")

_WORD = re.compile(r"[a-z0-9]+")


def note_terms(query: str) -> str:
    """The query's words as an OR tsquery text (``to_tsquery('english', ...)``), '' if none."""
    words = list(dict.fromkeys(_WORD.findall(query.lower())))[:32]
    return " | ".join(w for w in words if len(w) > 1)


def vector_relevance_sql(alias: str = "emb") -> str:
    """SQL for the bank-weighted cosine of ``alias``'s vectors against ``qv.v`` (NULL when the
    entry has no vector yet). Parameters: ``w_content``, ``w_useful_for``, ``w_context``."""
    num = " + ".join(f"coalesce(%(w_{d})s * (1 - ({alias}.{d} <=> qv.v)), 0)" for d in DIMENSIONS)
    den = " + ".join(
        f"(CASE WHEN {alias}.{d} IS NULL THEN 0 ELSE %(w_{d})s END)" for d in DIMENSIONS
    )
    return f"(({num}) / nullif({den}, 0))"


# ``{tsv}`` is the edge's stored ``note_tsv`` (``to_tsvector('english', note)``, a generated
# column: graph migration 0011), so no note is parsed at query time. ``{tsquery}`` is the
# query's words parsed once per statement (``NOTE_TSQUERY_SQL`` in a materialised CTE): written
# inline, a prepared statement's generic plan parsed and stemmed them again for every noted
# candidate (``to_tsquery`` is not immutable, so it is never folded to a constant) — most of
# the note match's cost, 0.6–0.8 ms of a hub's neighbour statement.
NOTE_TSQUERY_SQL = (
    "(CASE WHEN %(note_terms)s = '' THEN NULL ELSE to_tsquery('english', %(note_terms)s) END)"
)
# A note none of the query's words match ranks 0 (``ts_rank_cd`` scores covers, and a cover
# needs a match): ``@@`` (a lookup per word in the stored vector) says so for a fraction of the
# rank's cost, which builds and sorts the note's positions first. Most notes a hub hands the
# ranking match none of the words: 0.2 ms of a 5k-edge hub's neighbour statement (README,
# "Fold overhead, seventh round"). Same figure for every note, matched or not.
NOTE_RELEVANCE_SQL = (
    "(CASE WHEN %(note_terms)s = '' OR {note} = '' OR NOT {tsv} @@ {tsquery} THEN 0 ELSE "
    "ts_rank_cd({tsv}, {tsquery}, 32) END)"
)


def relevance_params(
    bank: Bank, query: str, query_vector: Sequence[float] | None
) -> dict[str, object]:
    weights = bank.dimension_weights() if bank else dict(DEFAULT_DIMENSION_WEIGHTS)
    params: dict[str, object] = {f"w_{d}": max(0.0, weights[d]) for d in DIMENSIONS}
    params["qvec"] = vector_literal(query_vector)
    params["note_terms"] = note_terms(query)
    params["note_weight"] = NOTE_WEIGHT
    params["note_vector_weight"] = NOTE_VECTOR_WEIGHT
    params["band"] = RELEVANCE_BAND
    return params
