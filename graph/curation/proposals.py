"""Merge proposals: find likely duplicate entries and queue them for a curator (``004_*`` 12.4).

Blocking, then matching, then abstention:

1. **Blocking** keeps the work far from quadratic: two alternate blocks, so a pair missed by
   one can still be found by the other. *Title tokens*: entries whose normalised titles share
   a rare token (in at most ``RARE_TOKEN_MAX_DF`` titles of the bank). *Nearest embeddings*:
   each entry's ``NEIGHBOURS_K`` nearest content vectors in the same bank (pgvector ``<=>``);
   entries without vectors are skipped.
2. **Matching** scores each candidate pair from the cosine of the content vectors, the name
   similarity of the titles (rapidfuzz ``token_set_ratio``) and, when both entries have
   current neighbours, the Jaccard overlap of those neighbours.
3. **Abstention**: at or above ``PROPOSE_HIGH`` (with cosine at least ``COSINE_FLOOR_HIGH``)
   the pair is queued ``pending`` as a likely duplicate; between ``PROPOSE_LOW`` and there it is
   queued ``unclear`` for a person to judge; below, nothing. A pair already joined by a typed
   edge (one corrects, supersedes, is part of … the other) is at most ``unclear``: the bank
   already says they are two things.

A wrong merge is worse than a missed one, so nothing here merges: it only writes
``MergeProposal`` rows. Pairs already proposed (in either order, whatever their status) and
pairs involving merged or deleted entries are skipped, so a re-run adds nothing new.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from django.db import DatabaseError, connection, transaction
from rapidfuzz import fuzz

from graph.edges.links import current_q
from graph.ingest.backfill import lock_bank
from graph.models import Edge, MergeProposal, ProposalStatus
from graph.resolution.aliases import normalize
from kb import audit
from kb.models import Bank, Entry, EntryEmbedding, EntryStatus

# --- tuning. Measured with all-MiniLM-L6-v2 (title + summary + content vectors): reworded
# duplicates score 0.91-0.93 (cosine 0.95-0.98); a duplicate with unlike titles 0.75 (cosine
# 0.86); related-but-distinct pairs 0.59-0.72 (a gotcha and its correction 0.71, two webhook
# entries 0.72); unrelated entries below 0.26. So high is well clear of related pairs, and the
# unclear band catches the renamed duplicate while leaving most merely-related pairs alone.
NEIGHBOURS_K = 5  # nearest content vectors per entry (embedding block)
RARE_TOKEN_MAX_DF = 20  # a title token shared by at most this many titles blocks pairs
MIN_TOKEN_LENGTH = 3
KNN_BATCH = 256  # entries per nearest-neighbour statement
W_COSINE, W_NAME, W_NEIGHBOURS = 0.55, 0.30, 0.15
PROPOSE_HIGH = 0.85  # ≥: pending, "likely duplicate"
COSINE_FLOOR_HIGH = 0.85  # ... and the texts must themselves be this close
PROPOSE_LOW = 0.72  # ≥ (and below high): unclear, queued for a person
# Relations that say two entries are deliberately distinct (see_also and cites do not).
DISTINCT_RELATIONS_EXEMPT = {"see_also", "cites"}

LIKELY_DUPLICATE = "likely duplicate"
UNCLEAR = "unclear: similar, but not clearly the same entry"

STOPWORDS = {
    "the", "and", "for", "with", "from", "into", "onto", "that", "this", "what", "when", "how",
    "why", "who", "not", "are", "was", "were", "has", "have", "had", "its", "our", "your",
    "their", "about", "after", "before", "over", "under", "via", "use", "using", "per", "all",
    "any", "can", "does", "should", "will", "must", "you", "they", "them", "then", "than",
}  # fmt: skip

Progress = Callable[[int, int], None]


@dataclass
class ProposalRun:
    """What one proposal run found and wrote."""

    entries: int = 0  # live entries with a content vector
    candidate_pairs: int = 0  # pairs produced by blocking
    scored: int = 0  # pairs scored (new, both with vectors)
    pending: int = 0
    unclear: int = 0
    skipped_existing: int = 0  # pairs already proposed, in either order
    over_limit: int = 0  # proposals left for the next run by ``limit``
    proposals: list[int] = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "entries": self.entries,
            "candidate_pairs": self.candidate_pairs,
            "scored": self.scored,
            "pending": self.pending,
            "unclear": self.unclear,
            "skipped_existing": self.skipped_existing,
            "over_limit": self.over_limit,
            "proposals": self.proposals,
        }

    def summary(self) -> str:
        return (
            f"Proposed {self.pending} likely duplicates and {self.unclear} unclear pairs "
            f"({self.scored} pairs scored from {self.candidate_pairs} candidates over "
            f"{self.entries} entries; {self.skipped_existing} already proposed, "
            f"{self.over_limit} over the limit)."
        )


@dataclass
class _Pair:
    a: int
    b: int
    blocked_by: set[str] = field(default_factory=set)
    shared_tokens: set[str] = field(default_factory=set)
    cosine: float | None = None


def _title_tokens(name: str) -> set[str]:
    """Blocking tokens of a normalised title."""
    return {t for t in name.split() if len(t) >= MIN_TOKEN_LENGTH and t not in STOPWORDS}


def _key(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


_KNN_SQL = """
SELECT e.entry_id, n.entry_id, 1 - (e.content <=> n.content)
  FROM {emb} e
  JOIN LATERAL (
        SELECT x.entry_id, x.content
          FROM {emb} x
          JOIN {entry} xe ON xe.id = x.entry_id
         WHERE x.bank_id = %(bank)s AND x.entry_id <> e.entry_id AND x.content IS NOT NULL
           AND xe.status NOT IN ('merged', 'deleted')
         ORDER BY x.content <=> e.content
         LIMIT %(k)s
  ) n ON TRUE
 WHERE e.bank_id = %(bank)s AND e.entry_id = ANY(%(ids)s)
"""


def _nearest_pairs(bank: Bank, ids: list[int], pairs: dict, progress: Progress | None) -> None:
    """Add each entry's nearest neighbours (same bank) to ``pairs`` with their cosine."""
    sql = _KNN_SQL.format(emb=EntryEmbedding._meta.db_table, entry=Entry._meta.db_table)
    with connection.cursor() as cursor:
        # The HNSW index spans every bank: keep scanning it until k rows of this bank pass
        # (pgvector ≥ 0.8; older servers lack the setting and scan as before).
        try:
            with transaction.atomic():
                cursor.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        except DatabaseError:
            pass
        for start in range(0, len(ids), KNN_BATCH):
            chunk = ids[start : start + KNN_BATCH]
            cursor.execute(sql, {"bank": bank.pk, "k": NEIGHBOURS_K, "ids": chunk})
            for a, b, cosine in cursor.fetchall():
                pair = pairs.setdefault(_key(a, b), _Pair(*_key(a, b)))
                pair.blocked_by.add("embedding")
                pair.cosine = float(cosine)
            if progress:
                progress(min(start + KNN_BATCH, len(ids)), len(ids))


def _title_pairs(names: dict[int, str], pairs: dict) -> None:
    """Add pairs whose normalised titles share a rare token."""
    blocks: dict[str, list[int]] = defaultdict(list)
    for pk, name in names.items():
        for token in _title_tokens(name):
            blocks[token].append(pk)
    for token, members in blocks.items():
        if not 2 <= len(members) <= RARE_TOKEN_MAX_DF:
            continue
        members.sort()
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                pair = pairs.setdefault((a, b), _Pair(a, b))
                pair.blocked_by.add("title")
                pair.shared_tokens.add(token)


def _fill_cosines(pairs: list[_Pair]) -> None:
    """Cosine for pairs found only by title blocking (one query, one vectorised product)."""
    todo = [p for p in pairs if p.cosine is None]
    missing = sorted({pk for p in todo for pk in (p.a, p.b)})
    if not missing:
        return
    rows = EntryEmbedding.objects.filter(entry_id__in=missing, content__isnull=False).values_list(
        "entry_id", "content"
    )
    index = {}
    vectors = []
    for pk, vector in rows:
        index[pk] = len(vectors)
        vectors.append(np.asarray(vector, dtype=np.float64))
    todo = [p for p in todo if p.a in index and p.b in index]
    if not todo:
        return
    matrix = np.vstack(vectors)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    left = matrix[[index[p.a] for p in todo]]
    right = matrix[[index[p.b] for p in todo]]
    for pair, cosine in zip(todo, np.einsum("ij,ij->i", left, right), strict=True):
        pair.cosine = float(cosine)


def score_pair(cosine: float, name: float, jaccard: float | None) -> float:
    """The combined score in [−1, 1]; without neighbour evidence the other weights rescale."""
    if jaccard is None:
        return (W_COSINE * cosine + W_NAME * name) / (W_COSINE + W_NAME)
    return W_COSINE * cosine + W_NAME * name + W_NEIGHBOURS * jaccard


def _live_entries(bank: Bank) -> tuple[dict, dict, list[int]]:
    """Normalised titles and creation times of the bank's live entries, and the live entries
    with a content vector (one consistent set)."""
    live = list(
        Entry.objects.filter(bank=bank)
        .exclude(status__in=[EntryStatus.MERGED, EntryStatus.DELETED])
        .values_list("pk", "title", "created_at")
    )
    names = {pk: normalize(title) for pk, title, _ in live}
    created = {pk: when for pk, _, when in live}
    with_vectors = sorted(
        EntryEmbedding.objects.filter(bank=bank, content__isnull=False)
        .exclude(entry__status__in=[EntryStatus.MERGED, EntryStatus.DELETED])
        .values_list("entry_id", flat=True)
    )
    return names, created, [pk for pk in with_vectors if pk in names]


def _current_links(bank: Bank) -> tuple[dict[int, set[int]], dict[tuple[int, int], set[str]]]:
    """Each entry's neighbours over current edges, and the relations linking each pair."""
    neighbours: dict[int, set[int]] = defaultdict(set)
    links: dict[tuple[int, int], set[str]] = defaultdict(set)
    for a, b, relation in (
        Edge.objects.filter(bank=bank)
        .filter(current_q())
        .values_list("from_entry_id", "to_entry_id", "type__name")
    ):
        neighbours[a].add(b)
        neighbours[b].add(a)
        links[_key(a, b)].add(relation)
    return neighbours, links


def _score_pairs(fresh, names, neighbours, links, actor, run) -> list[tuple[float, _Pair, dict]]:
    """Each fresh pair at or above the low threshold with its score and its reasons."""
    scored: list[tuple[float, _Pair, dict]] = []
    for pair in fresh:
        if pair.cosine is None or pair.a not in names or pair.b not in names:
            continue  # no vector to judge by, or merged away while this run read
        run.scored += 1
        name = fuzz.token_set_ratio(names[pair.a], names[pair.b]) / 100
        na = neighbours.get(pair.a, set()) - {pair.b}
        nb = neighbours.get(pair.b, set()) - {pair.a}
        jaccard = len(na & nb) / len(na | nb) if na and nb else None
        score = score_pair(pair.cosine, name, jaccard)
        if score < PROPOSE_LOW:
            continue
        linked = sorted(links.get((pair.a, pair.b), set()) - DISTINCT_RELATIONS_EXEMPT)
        likely = score >= PROPOSE_HIGH and pair.cosine >= COSINE_FLOOR_HIGH and not linked
        reasons = {
            "verdict": LIKELY_DUPLICATE if likely else UNCLEAR,
            "cosine": round(pair.cosine, 4),
            "name_similarity": round(name, 4),
            "neighbour_jaccard": None if jaccard is None else round(jaccard, 4),
            "shared_neighbours": len(na & nb),
            "blocked_by": sorted(pair.blocked_by),
            "shared_tokens": sorted(pair.shared_tokens),
            "linked_as": linked,
            "thresholds": {"high": PROPOSE_HIGH, "low": PROPOSE_LOW},
            "proposed_by": actor,
        }
        scored.append((score, pair, reasons))
    return scored


def _proposal_rows(bank: Bank, chosen, neighbours, created, run) -> list[MergeProposal]:
    rows = []
    for score, pair, reasons in chosen:
        degree = {pk: len(neighbours.get(pk, ())) for pk in (pair.a, pair.b)}
        # keep the more connected entry (fewer edges to re-point), then the older one
        keep, away = sorted((pair.a, pair.b), key=lambda pk: (-degree[pk], created[pk], pk))
        likely = reasons["verdict"] == LIKELY_DUPLICATE
        rows.append(
            MergeProposal(
                bank=bank,
                keep_id=keep,
                away_id=away,
                score=round(score, 4),
                reasons=reasons,
                status=ProposalStatus.PENDING if likely else ProposalStatus.UNCLEAR,
            )
        )
        if likely:
            run.pending += 1
        else:
            run.unclear += 1
    return rows


def propose_merges(
    bank: Bank, *, limit: int = 200, progress: Progress | None = None
) -> ProposalRun:
    """Queue likely-duplicate pairs of ``bank`` as ``MergeProposal`` rows (never merges).

    At most ``limit`` new proposals, best scores first; idempotent: a re-run with no new
    entries adds nothing.
    """
    run = ProposalRun()
    actor = audit.current().actor
    with transaction.atomic():
        lock_bank(bank)
        names, created, with_vectors = _live_entries(bank)
        run.entries = len(with_vectors)
        vectored = set(with_vectors)

        pairs: dict[tuple[int, int], _Pair] = {}
        _nearest_pairs(bank, with_vectors, pairs, progress)
        _title_pairs({pk: n for pk, n in names.items() if pk in vectored}, pairs)
        run.candidate_pairs = len(pairs)

        proposed = {
            _key(k, a)
            for k, a in MergeProposal.objects.filter(bank=bank).values_list("keep_id", "away_id")
        }
        fresh = [p for key, p in pairs.items() if key not in proposed]
        run.skipped_existing = len(pairs) - len(fresh)
        _fill_cosines(fresh)

        neighbours, links = _current_links(bank)
        scored = _score_pairs(fresh, names, neighbours, links, actor, run)
        scored.sort(key=lambda item: (-item[0], item[1].a, item[1].b))
        run.over_limit = max(0, len(scored) - max(limit, 0))
        rows = _proposal_rows(bank, scored[: max(limit, 0)], neighbours, created, run)
        run.proposals = [p.pk for p in MergeProposal.objects.bulk_create(rows)]
    return run
