"""Refusing near-exact duplicates: one decision, made by the create-entry service.

A new entry is a duplicate of an existing one (of the same bank, not merged or deleted) when

1. its normalised text equals the existing entry's (title and content, compared after Unicode
   NFKC, case folding, and dropping punctuation and runs of white space), or
2. the real model's content vectors (title, summary and content, exactly the text the stored
   ``content`` vector is computed from) have a cosine of at least ``KB_DUPLICATE_REFUSE_MIN``
   *and* both texts state the same numbers. Two notes that differ only in a number ("retry 3
   times" / "retry 5 times") embed almost identically but say different things: one may
   correct the other, so neither is refused.

The threshold is set on ``bench/data/duplicates_tuning.jsonl`` and reported on the blind
``bench/data/blind/duplicates.jsonl`` (``bench/duplicates.py``). A caller that means to store a
near copy says ``allow_duplicate``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection
from pgvector.django import CosineDistance

from kb.errors import Conflict, InvalidInput
from kb.models import Bank, Entry, EntryEmbedding, EntryStatus, title_letters

# How many nearest entries the vector arm reads before giving up on the number check.
NEAREST = 5
_NOT_WORD = re.compile(r"[\W_]+", re.UNICODE)
_NOT_ASCII_WORD = re.compile(r"[^a-z0-9]+")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_GONE = (EntryStatus.MERGED, EntryStatus.DELETED)


@dataclass(frozen=True)
class DuplicateMatch:
    """The existing entry a new one duplicates, and how closely."""

    short_id: str
    title: str
    similarity: float
    basis: str  # "same_text" or "vectors"


def normalised_text(text: str) -> str:
    """Text as compared for equality: NFKC, case-folded, punctuation and spacing dropped."""
    folded = unicodedata.normalize("NFKC", text or "").casefold()
    return " ".join(_NOT_WORD.sub(" ", folded).split())


def numbers_in(text: str) -> tuple[str, ...]:
    """The numbers a text states (versions, limits, codes), as written and in order: "1-2" and
    "2-1" say different things."""
    return tuple(_NUMBER.findall(text or ""))


def content_text(title: str, summary: str, content: str) -> str:
    """The text of the ``content`` dimension (as ``embedding.dimension_texts`` builds it)."""
    return "\n".join(p for p in [title, summary, content] if p)


def is_duplicate_pair(new_text: str, old_text: str, cosine: float, threshold: float) -> bool:
    """The pair rule of the module docstring, over two ``content_text`` strings."""
    if normalised_text(new_text) == normalised_text(old_text):
        return True
    return cosine >= threshold and numbers_in(new_text) == numbers_in(old_text)


def read_allow_duplicate(body: Any) -> bool:
    """Take ``allow_duplicate`` out of a request body (a dict); a non-boolean is refused."""
    if not isinstance(body, dict) or "allow_duplicate" not in body:
        return False
    value = body.pop("allow_duplicate")
    if not isinstance(value, bool):  # null too: the schema says a boolean
        raise InvalidInput(
            "allow_duplicate must be true or false.",
            code="invalid_entry",
            fields={"allow_duplicate": "Must be a boolean."},
        )
    return value


def _title_letters(title: str) -> str:
    """The ASCII letters and digits of the lower-cased NFKC title: the SQL narrowing key."""
    return _NOT_ASCII_WORD.sub("", unicodedata.normalize("NFKC", title).lower())


def _same_text(bank: Bank, title: str, content: str) -> DuplicateMatch | None:
    key_title = normalised_text(title)
    key_content = normalised_text(content)
    # Narrow in SQL by the title's ASCII letters and digits (an index of the entry table has
    # this key), compare exactly in Python.
    rows = (
        Entry.objects.filter(bank=bank)
        .exclude(status__in=_GONE)
        .annotate(letters=title_letters())
        .filter(letters=_title_letters(title))
        .order_by("title")  # not the model's ordering: it joins the bank to sort by its slug
        .values_list("short_id", "title", "content")[:50]
    )
    for short_id, other_title, other_content in rows:
        if (normalised_text(other_title), normalised_text(other_content)) == (
            key_title,
            key_content,
        ):
            return DuplicateMatch(short_id, other_title, 1.0, "same_text")
    return None


@dataclass(frozen=True)
class Neighbour:
    """A live entry of the bank near a text by content vector (``distance``: cosine distance)."""

    short_id: str
    title: str
    summary: str
    content: str
    distance: float


# The nearest vectors are read first, without the entry table (joined first, to drop merged
# and deleted rows, it was hashed whole — every bank's entries — on every write), then joined
# for their texts and status; REACH more rows than asked for leave room for merged or deleted
# entries among them, and when that room is not enough the statement of record runs (the same
# answer, one statement more, rarely).
REACH = 15
_NEAREST_SQL = """
SELECT e.short_id, e.title, e.summary, e.content, n.distance, e.status
  FROM (SELECT entry_id, content <=> %(vec)s::vector AS distance
          FROM kb_entryembedding
         WHERE bank_id = %(bank)s AND content IS NOT NULL AND entry_id <> %(exclude)s
         ORDER BY content <=> %(vec)s::vector
         LIMIT %(reach)s) n
  JOIN kb_entry e ON e.id = n.entry_id
"""


def nearest_entries(
    bank: Bank, text: str, *, limit: int = NEAREST, exclude_pk: int | None = None
) -> list[Neighbour]:
    """The ``limit`` live entries of ``bank`` whose content vectors are nearest to ``text``'s,
    nearest first, in one statement (see ``REACH``); what the duplicate check and the write
    feedback both read.

    The statement is ``ORDER BY distance LIMIT k`` with no bound on the distance: with the
    bank's own HNSW index (a large bank) pgvector walks it and stops after ``k`` rows, where a
    bound that few rows pass kept its iterative scan reading on to ``hnsw.max_scan_tuples``; a
    smaller bank is scanned exactly. Callers apply their own floor to the rows (the nearest
    ``k`` within a floor are the first rows within it)."""
    from kb.services.embedding import embed_query, get_embedder, remembered_vector, vector_literal

    if remembered_vector(get_embedder().name, text) is None and not _has_vectors(bank, exclude_pk):
        return []  # nothing to compare with: the model is not even loaded
    vector = embed_query(text)
    reach = limit + REACH
    params = {
        "vec": vector_literal(vector),
        "bank": int(bank.pk),
        "exclude": exclude_pk or 0,
        "reach": reach,
    }
    with connection.cursor() as cursor:
        cursor.execute(_NEAREST_SQL, params)
        rows = cursor.fetchall()
    live = [Neighbour(*row[:5]) for row in rows if row[5] not in _GONE]
    if len(live) < limit and len(rows) == reach:
        live = _nearest_of_record(bank, vector, limit, exclude_pk)
    # pgvector's relaxed iterative scan may hand an index's rows slightly out of order.
    return sorted(live, key=lambda near: near.distance)[:limit]


def _live_vectors(bank: Bank, exclude_pk: int | None):
    stored = EntryEmbedding.objects.filter(bank=bank, content__isnull=False).exclude(
        entry__status__in=_GONE
    )
    return stored.exclude(entry_id=exclude_pk) if exclude_pk is not None else stored


def _has_vectors(bank: Bank, exclude_pk: int | None) -> bool:
    return _live_vectors(bank, exclude_pk).exists()


def _nearest_of_record(bank: Bank, vector, limit: int, exclude_pk: int | None) -> list[Neighbour]:
    """The nearest live entries by the plain statement (every live row of the bank joined)."""
    rows = (
        _live_vectors(bank, exclude_pk)
        .annotate(distance=CosineDistance("content", vector))
        .order_by("distance")
        .values_list(
            "entry__short_id", "entry__title", "entry__summary", "entry__content", "distance"
        )[:limit]
    )
    return [Neighbour(*row) for row in rows]


def _close_vectors(text: str, nearest: list[Neighbour], threshold: float) -> DuplicateMatch | None:
    for near in nearest:
        if near.distance > 1 - threshold:
            continue
        other = content_text(near.title, near.summary, near.content)
        if is_duplicate_pair(text, other, 1 - near.distance, threshold):
            return DuplicateMatch(near.short_id, near.title, round(1 - near.distance, 3), "vectors")
    return None


def duplicate_text(values: dict[str, Any]) -> str:
    """The text the vector arm compares for ``values`` (a cleaned entry payload)."""
    return content_text(
        values.get("title") or "", values.get("summary") or "", values.get("content") or ""
    )


# ``same`` of find_duplicate when the same-text arm is still to be read.
UNREAD = object()


def same_text_match(bank: Bank, values: dict[str, Any]) -> DuplicateMatch | None:
    """The entry of ``bank`` with the same title and content as ``values``, if any (read it
    before the new entry is written, or it finds that one)."""
    return _same_text(bank, values.get("title") or "", values.get("content") or "")


def find_duplicate(
    bank: Bank,
    values: dict[str, Any],
    nearest: list[Neighbour] | None = None,
    *,
    same: DuplicateMatch | None | object = UNREAD,
) -> DuplicateMatch | None:
    """The existing entry of ``bank`` that ``values`` (a cleaned entry payload) duplicates.
    ``nearest``: the text's nearest entries when the caller read them already
    (:func:`nearest_entries`, at least ``NEAREST``); ``same``: the same-text arm's answer
    when the caller read it already (:func:`same_text_match`)."""
    match = same_text_match(bank, values) if same is UNREAD else same
    if match is not None:
        return match
    text = duplicate_text(values)
    if not text.strip():
        return None
    if nearest is None:
        nearest = nearest_entries(bank, text)
    return _close_vectors(text, nearest[:NEAREST], settings.KB_DUPLICATE_REFUSE_MIN)


def refuse_duplicate(
    bank: Bank,
    values: dict[str, Any],
    nearest: list[Neighbour] | None = None,
    *,
    same: DuplicateMatch | None | object = UNREAD,
) -> None:
    """Raise ``duplicate_entry`` (409) when ``values`` duplicates an entry of ``bank``."""
    match = find_duplicate(bank, values, nearest, same=same)
    if match is None:
        return
    how = (
        "has the same title and content"
        if match.basis == "same_text"
        else f"says the same thing (similarity {match.similarity})"
    )
    raise Conflict(
        f"Entry {match.short_id} ({match.title!r}) {how}: update that entry or link to it "
        "instead, or send allow_duplicate: true to store this one anyway.",
        code="duplicate_entry",
        fields={"existing": match.short_id},
    )
