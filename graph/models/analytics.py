"""Derived graph data: Louvain communities with extractive summaries, and edge-note vectors.

Nothing here is a source of truth: every row is recomputed from entries and current edges
(``graph.analytics.communities.build_communities``, ``graph.retrieval.facts.embed_edge_notes``),
so these models carry no history and are replaced wholesale.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from kb.models import Bank, BankOwned, Entry

__all__ = ["Community", "CommunityMembership", "EdgeEmbedding"]


class Community(BankOwned):
    """A Louvain community of a bank's current edges, summarised extractively.

    ``summary`` names the most central members and the terms that set the community apart
    from the rest of the bank; ``embedding`` is the summary's vector (cosine search).
    """

    label = models.CharField(max_length=300)
    size = models.PositiveIntegerField()
    summary = models.TextField()
    terms = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    central_entry_ids = ArrayField(
        models.BigIntegerField(), default=list, blank=True, help_text="Most central members."
    )
    embedding = VectorField(dimensions=settings.KB_EMBEDDING_DIM, null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True, default="")
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "communities"
        ordering = ["bank", "-size", "id"]
        indexes = [
            models.Index(fields=["bank", "size"], name="community_bank_size"),
            HnswIndex(
                name="community_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.label} ({self.size})"


class CommunityMembership(models.Model):
    """An entry's community (at most one per entry) and its centrality within it (0..1)."""

    community = models.ForeignKey(Community, on_delete=models.CASCADE, related_name="memberships")
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    entry = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="+")
    centrality = models.FloatField()

    class Meta:
        ordering = ["community", "-centrality", "entry"]
        constraints = [
            models.UniqueConstraint(fields=["entry"], name="membership_one_community_per_entry"),
        ]
        indexes = [models.Index(fields=["community", "centrality"], name="membership_central")]

    def __str__(self) -> str:
        return f"{self.entry_id} in {self.community_id}"


class EdgeEmbedding(models.Model):
    """The vector of one edge's fact sentence (ends, relation and note), for fact search.

    Only edges with a note get one; ``source_hash`` (model + text) makes re-embedding a no-op
    until the text changes.
    """

    edge = models.OneToOneField(
        "graph.Edge", primary_key=True, on_delete=models.CASCADE, related_name="note_embedding"
    )
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    vector = VectorField(dimensions=settings.KB_EMBEDDING_DIM)
    source_hash = models.CharField(max_length=64)
    model = models.CharField(max_length=200)
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["bank"], name="edgeemb_bank"),
            HnswIndex(
                name="edgeemb_vector_hnsw",
                fields=["vector"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"vector of edge {self.edge_id}"
