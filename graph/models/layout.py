"""The cached picture of a bank: server-side layout positions, recomputed after edits.

Derived data like communities: nothing here is a source of truth, so no history; the row is
replaced whole by ``graph.analytics.layout_store.refresh_layout``.
"""

from __future__ import annotations

from django.db import models

from kb.models import Bank

__all__ = ["GraphLayout", "ViewLayout"]


class GraphLayout(models.Model):
    """One bank's cached layout: 3D and 2D positions and Louvain clusters per entry.

    ``positions`` is a packed array of records (entry pk int64, x y z float32, 2D x y float32,
    cluster int32 with -1 for none; ``graph.analytics.layout_store.POSITION_DTYPE``): a 10k
    bank's layout is 280 kB and decodes in microseconds. ``fingerprint`` hashes the node set and edge pairs
    the layout was computed from, so a reader knows when it is stale. ``requested_at`` is the
    debounce marker: set while a refresh job is scheduled, cleared when the job starts.
    """

    bank = models.OneToOneField(Bank, on_delete=models.CASCADE, related_name="+")
    positions = models.BinaryField(default=bytes, blank=True)
    fingerprint = models.CharField(max_length=64, blank=True, default="")
    node_count = models.PositiveIntegerField(default=0)
    edge_count = models.PositiveIntegerField(default=0)
    clusters = models.PositiveIntegerField(default=0)
    computed_at = models.DateTimeField(null=True, blank=True)
    took_ms = models.FloatField(default=0.0)
    requested_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"layout of bank {self.bank_id} ({self.node_count} nodes)"

    @property
    def is_computed(self) -> bool:
        return self.computed_at is not None


class ViewLayout(models.Model):
    """A cached view of a bank too large to draw whole: the community overview
    (``community`` null) or one community's drill-down, so opening it again is a read, not a
    layout.

    ``positions`` packs the drawn nodes as ``GraphLayout.positions`` does (for the overview the
    records are communities); ``data`` holds what else the view needs (the overview's edge
    counts between communities). ``fingerprint`` hashes what the view was computed from (the
    drawn node set and the edge pairs among them; for the overview the communities), so a
    reader never serves a stale picture. Edits drop the bank's overview after commit (the
    path that marks the bank layout), and rebuilding communities drops every row (cascade).
    """

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    community = models.ForeignKey(
        "graph.Community", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    key = models.CharField(max_length=100)
    fingerprint = models.CharField(max_length=64)
    positions = models.BinaryField(default=bytes, blank=True)
    data = models.JSONField(default=dict, blank=True)
    node_count = models.PositiveIntegerField(default=0)
    clusters = models.PositiveIntegerField(default=0)
    computed_at = models.DateTimeField()
    took_ms = models.FloatField(default=0.0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bank", "key"], name="view_layout_bank_key"),
        ]

    def __str__(self) -> str:
        return f"{self.key} of bank {self.bank_id} ({self.node_count} nodes)"
