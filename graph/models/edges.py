"""The graph: edge types, bi-temporal typed edges and aliases.

Every row belongs to one bank. Edges are never overwritten: a correction closes the row's
transaction interval (``invalidated_at``) and appends new rows, so both "what was true then"
(valid time) and "what did we believe then" (transaction time) stay answerable.
"""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.utils import timezone
from simple_history.models import HistoricalRecords

from graph.edges.current import edge_is_current
from kb.models import AuditedHistory, Bank, BankOwned, Entry, HistoryManagerOnce


class FoldRole(models.TextChoices):
    NONE = "", "none"
    DOMINATES = "dominates", "dominates (source wins over target)"
    PARENT = "parent", "parent (target is the parent)"


class WorkflowRole(models.TextChoices):
    NONE = "", "none"
    PRECEDES = "precedes"
    REQUIRES = "requires"
    PRODUCES = "produces"
    OWNED_BY = "owned_by"


class EdgeType(models.Model):
    """A relation of the vocabulary. Core types have no bank; banks add their own."""

    bank = models.ForeignKey(
        Bank, null=True, blank=True, on_delete=models.CASCADE, related_name="edge_types"
    )
    name = models.SlugField(max_length=64)
    inverse = models.CharField(
        max_length=64, blank=True, default="", help_text="Label seen from the target."
    )
    fold_role = models.CharField(max_length=10, choices=FoldRole.choices, blank=True, default="")
    transitive = models.BooleanField(
        default=False, help_text="Kept when bridging over a deleted entry."
    )
    neighbor_priority = models.IntegerField(
        default=10, help_text="Higher is shown first among neighbors."
    )
    score_weight = models.FloatField(default=1.0)
    workflow_role = models.CharField(
        max_length=10, choices=WorkflowRole.choices, blank=True, default=""
    )
    description = models.CharField(max_length=300, blank=True, default="")
    phrases = ArrayField(
        models.CharField(max_length=100),
        default=list,
        blank=True,
        help_text="Phrases stating this relation from source to target (comma-separated), "
        "e.g. 'requires, needs'. The local edge extractor matches them in prose.",
    )
    inverse_phrases = ArrayField(
        models.CharField(max_length=100),
        default=list,
        blank=True,
        help_text="Phrases stating it from target to source, e.g. 'is required by'.",
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["bank", "name"], name="edgetype_unique_per_bank"),
            models.UniqueConstraint(
                fields=["name"], condition=Q(bank__isnull=True), name="edgetype_unique_core"
            ),
        ]

    def __str__(self) -> str:
        return self.name if self.bank_id is None else f"{self.name} ({self.bank})"


class EdgeSource(models.TextChoices):
    AUTHOR = "author"
    STAFF = "staff"
    JUDGE = "judge"
    CITATION_BACKFILL = "citation_backfill"
    METADATA_BACKFILL = "metadata_backfill"
    HEADER_PARSE = "header_parse"
    BRIDGED = "bridged"
    IMPORT = "import"
    MERGE = "merge"
    CORRECTION = "correction"
    EXTRACTED = "extracted"


class Edge(BankOwned):
    """A typed, noted, evidenced edge with valid time and transaction time.

    Current = transaction interval open (``invalidated_at`` is null) and valid interval
    (half-open ``[valid_from, valid_to)``, null = unbounded) containing now.
    PostgreSQL enforces: no self-loop, both ends in the edge's bank (composite foreign keys),
    and no two believed rows of one (from, to, type) with overlapping valid time.
    """

    # No single-column foreign key constraint on the ends: the composite ones
    # (edge_from_same_bank, edge_to_same_bank: the end, in the edge's bank) enforce the same
    # and more, and each constraint is a check per row at commit (400k rows in a bulk import).
    from_entry = models.ForeignKey(
        Entry, on_delete=models.CASCADE, related_name="edges_out", db_constraint=False
    )
    to_entry = models.ForeignKey(
        Entry, on_delete=models.CASCADE, related_name="edges_in", db_constraint=False
    )
    type = models.ForeignKey(EdgeType, on_delete=models.PROTECT, related_name="edges")
    label = models.CharField(
        max_length=200, blank=True, default="", help_text="Free text of an 'other' relation."
    )
    note = models.TextField(
        blank=True, default="", help_text="How the other entry pertains, never what it says."
    )
    evidence = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=20, choices=EdgeSource.choices, default=EdgeSource.AUTHOR)
    actor = models.CharField(max_length=200, blank=True, default="")
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_to = models.DateTimeField(null=True, blank=True)
    recorded_at = models.DateTimeField(default=timezone.now)
    invalidated_at = models.DateTimeField(null=True, blank=True)
    invalidated_reason = models.TextField(blank=True, default="")
    replaces = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replaced_by"
    )

    history = HistoricalRecords(
        bases=[AuditedHistory],
        history_manager=HistoryManagerOnce,
        cascade_delete_history=False,
    )

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(from_entry=models.F("to_entry")), name="edge_no_self_loop"
            ),
            models.CheckConstraint(
                condition=Q(valid_from__isnull=True)
                | Q(valid_to__isnull=True)
                | Q(valid_from__lt=models.F("valid_to")),
                name="edge_valid_interval_ordered",
            ),
        ]
        indexes = [
            models.Index(
                fields=["from_entry", "type"],
                name="edge_from_open",
                condition=Q(invalidated_at__isnull=True),
            ),
            models.Index(
                fields=["to_entry", "type"],
                name="edge_to_open",
                condition=Q(invalidated_at__isnull=True),
            ),
            models.Index(fields=["bank", "type"]),
            models.Index(fields=["bank", "recorded_at"]),
            # The fold's neighbour candidates, read newest first per end with a cap, so a hub
            # costs the cap in index order rather than its degree (noted and bare apart).
            models.Index(
                fields=["from_entry", "-id"],
                name="edge_from_open_noted",
                condition=Q(invalidated_at__isnull=True) & ~Q(note=""),
            ),
            models.Index(
                fields=["to_entry", "-id"],
                name="edge_to_open_noted",
                condition=Q(invalidated_at__isnull=True) & ~Q(note=""),
            ),
            models.Index(
                fields=["from_entry", "-id"],
                name="edge_from_open_bare",
                condition=Q(invalidated_at__isnull=True, note=""),
            ),
            models.Index(
                fields=["to_entry", "-id"],
                name="edge_to_open_bare",
                condition=Q(invalidated_at__isnull=True, note=""),
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.from_entry.short_id} -{self.type.name}-> {self.to_entry.short_id}"

    def is_current(self, now=None) -> bool:
        """Believed now and valid at ``now`` (the rule of ``graph/edges/current.py``)."""
        return edge_is_current(self.invalidated_at, self.valid_from, self.valid_to, now)

    @property
    def relation(self) -> str:
        return self.type.name


class Alias(BankOwned):
    """A surface form naming an entry. A form may name several entries (a real ambiguity: a
    virtual package, two people of one name); each (form, entry) pair is one row."""

    surface = models.CharField(max_length=300)
    normalized = models.CharField(max_length=300)
    # Enforced by the composite alias_entry_same_bank (the entry, in the alias's bank).
    entry = models.ForeignKey(
        Entry, on_delete=models.CASCADE, related_name="aliases", db_constraint=False
    )
    source = models.CharField(max_length=20, default="staff")
    actor = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    history = HistoricalRecords(
        bases=[AuditedHistory],
        history_manager=HistoryManagerOnce,
        cascade_delete_history=False,
    )

    class Meta:
        verbose_name_plural = "aliases"
        ordering = ["normalized"]
        constraints = [
            models.UniqueConstraint(
                fields=["bank", "normalized", "entry"], name="alias_unique_per_entry"
            ),
        ]
        indexes = [models.Index(fields=["bank", "normalized"], name="alias_form_idx")]

    def __str__(self) -> str:
        return f"{self.surface} → {self.entry.short_id}"
