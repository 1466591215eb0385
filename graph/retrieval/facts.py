"""Fact search (``003_*``): every edge with a note is a fact sentence with its own vector.

The sentence reads "<from title> <relation> <to title>: <note>", so a question about what a
note says, or about who is connected to whom, finds the edge. Search covers current edges only
(transaction interval open, valid at ``valid_at`` or now): the vector arm over
``EdgeEmbedding`` (HNSW, cosine) and a lexical arm over the notes (full text, any of the
query's words), so an edge is findable by its words before its vector exists.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
from dataclasses import dataclass

from django.db import connection
from django.db.models import Q
from django.utils import timezone
from pgvector.django import CosineDistance

from graph.edges.current import current_edge_sql
from graph.edges.links import believed_q, valid_q
from graph.models import Edge, EdgeEmbedding
from kb.errors import InvalidInput
from kb.models import Bank
from kb.services.embedding import Embedder, embed_query, get_embedder

LEXICAL_WEIGHT = 0.5
EMBED_BATCH = 256

_LEXICAL_SQL = f"""
SELECT e.id, ts_rank_cd(e.note_tsv, q) AS rank
  FROM graph_edge e,
       CAST(replace(websearch_to_tsquery('english', %(text)s)::text, ' & ', ' | ') AS tsquery) AS q
 WHERE e.bank_id = %(bank)s AND e.note <> ''
   AND {current_edge_sql("e", "%(at)s")}
   AND e.note_tsv @@ q
 ORDER BY rank DESC, e.id
 LIMIT %(k)s
"""


def fact_sentence(edge: Edge) -> str:
    relation = edge.label or edge.type.name.replace("_", " ")
    return f"{edge.from_entry.title} {relation} {edge.to_entry.title}: {edge.note}"


def _hash(model: str, text: str) -> str:
    return hashlib.sha256(json.dumps([model, text]).encode()).hexdigest()


def embed_edge_notes(bank: Bank, *, embedder: Embedder | None = None, force: bool = False) -> int:
    """Embed the fact sentence of every open edge of ``bank`` that has a note and whose text
    changed since it was embedded; return how many vectors were written (0 when up to date)."""
    embedder = embedder or get_embedder()
    edges = (
        Edge.objects.filter(bank=bank, invalidated_at__isnull=True)
        .exclude(note="")
        .select_related("type", "from_entry", "to_entry")
        .order_by("id")
    )
    existing = dict(EdgeEmbedding.objects.filter(bank=bank).values_list("edge_id", "source_hash"))
    todo: list[tuple[Edge, str, str]] = []
    for edge in edges.iterator(chunk_size=2000):
        text = fact_sentence(edge)
        digest = _hash(embedder.name, text)
        if force or existing.get(edge.pk) != digest:
            todo.append((edge, text, digest))
    written = 0
    for start in range(0, len(todo), EMBED_BATCH):
        chunk = todo[start : start + EMBED_BATCH]
        vectors = embedder.embed([text for _, text, _ in chunk])
        now = timezone.now()
        EdgeEmbedding.objects.bulk_create(
            [
                EdgeEmbedding(
                    edge_id=edge.pk,
                    bank_id=bank.pk,
                    vector=vector,
                    source_hash=digest,
                    model=embedder.name,
                    computed_at=now,
                )
                for (edge, _, digest), vector in zip(chunk, vectors, strict=True)
            ],
            update_conflicts=True,
            unique_fields=["edge"],
            update_fields=["vector", "source_hash", "model", "computed_at"],
        )
        written += len(chunk)
    # Vectors of closed edges are dead weight in the index: a correction appended a new row.
    EdgeEmbedding.objects.filter(bank=bank, edge__invalidated_at__isnull=False).delete()
    return written


@dataclass
class FactHit:
    edge: Edge
    score: float
    vector_score: float | None
    lexical_score: float | None

    def as_json(self) -> dict:
        e = self.edge
        return {
            "edge": {
                "id": e.pk,
                "from": e.from_entry.short_id,
                "to": e.to_entry.short_id,
                "relation": e.type.name,
                "label": e.label or None,
                "note": e.note,
                "valid_from": e.valid_from.isoformat() if e.valid_from else None,
                "valid_to": e.valid_to.isoformat() if e.valid_to else None,
            },
            "from": _end(e.from_entry),
            "to": _end(e.to_entry),
            "score": round(self.score, 6),
            "matched_by": [
                arm
                for arm, s in (("vector", self.vector_score), ("lexical", self.lexical_score))
                if s is not None
            ],
        }


def _end(entry) -> dict:
    return {"id": entry.short_id, "title": entry.title, "summary": entry.summary}


def search_facts(
    bank: Bank,
    query: str,
    *,
    limit: int = 10,
    valid_at: dt.datetime | None = None,
    embedder: Embedder | None = None,
) -> tuple[list[FactHit], float]:
    """The current edges (valid at ``valid_at``, default now) whose fact sentence best matches
    ``query``: cosine similarity fused with the notes' full-text rank (weight 0.5)."""
    started = time.perf_counter()
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput(
            "query must not be blank.", code="invalid_input", fields={"query": "Required."}
        )
    at = valid_at or timezone.now()
    pool = max(limit * 4, 40)
    vector = embed_query(query, embedder)
    live = believed_q(None, "edge__") & valid_q(at, "edge__")
    by_vector = dict(
        EdgeEmbedding.objects.filter(bank=bank)
        .filter(live)
        .annotate(distance=CosineDistance("vector", vector))
        .order_by("distance")
        .values_list("edge_id", "distance")[:pool]
    )
    with connection.cursor() as cursor:
        cursor.execute(_LEXICAL_SQL, {"text": query, "bank": bank.pk, "at": at, "k": pool})
        by_text = dict(cursor.fetchall())
    top_rank = max(by_text.values(), default=0.0) or 1.0
    ids = set(by_vector) | set(by_text)
    # Edges found only lexically still get a cosine if they have a vector.
    missing = ids - set(by_vector)
    if missing:
        by_vector.update(
            EdgeEmbedding.objects.filter(bank=bank, edge_id__in=missing)
            .annotate(distance=CosineDistance("vector", vector))
            .values_list("edge_id", "distance")
        )
    edges = (
        Edge.objects.filter(bank=bank, pk__in=ids)
        .filter(Q(invalidated_at__isnull=True))
        .select_related("type", "from_entry", "to_entry")
        .in_bulk()
    )
    hits = []
    for pk, edge in edges.items():
        cosine = 1.0 - by_vector[pk] if pk in by_vector else None
        lexical = by_text[pk] / top_rank if pk in by_text else None
        score = (cosine or 0.0) + LEXICAL_WEIGHT * (lexical or 0.0)
        hits.append(FactHit(edge, score, cosine, lexical))
    hits.sort(key=lambda h: (-h.score, h.edge.pk))
    return hits[:limit], (time.perf_counter() - started) * 1000
