"""Edge extraction: proposals read from prose, waiting for a curator, and the per-bank watermark.

A proposal never counts as an edge: accepting it writes the edge through the link service
(``graph.curation.edge_proposals``). Every proposal quotes the span of its source entry that
states it; ends that did not resolve to exactly one entry keep their surface form and stay
null until a curator names them.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from kb.models import Bank, BankOwned, Entry

__all__ = ["EdgeProposal", "EdgeProposalStatus", "ExtractionState"]


class EdgeProposalStatus(models.TextChoices):
    OPEN = "open"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


class EdgeProposal(BankOwned):
    """A relation stated in an entry's text, proposed as an edge, with the verbatim span.

    ``fingerprint`` identifies the statement (source entry, relation, both surface forms,
    normalised): one row per statement and bank, whatever its status, so a decided proposal
    is never raised again.
    """

    source_entry = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="+")
    span = models.TextField(help_text="Verbatim text of the source entry stating the relation.")
    type = models.ForeignKey("graph.EdgeType", on_delete=models.CASCADE, related_name="proposals")
    from_entry = models.ForeignKey(
        Entry, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    to_entry = models.ForeignKey(
        Entry, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    from_text = models.CharField(max_length=300)
    to_text = models.CharField(max_length=300)
    candidates = models.JSONField(
        default=dict, blank=True, help_text="Unresolved ends: {'from'|'to': [{id, title, score}]}."
    )
    confidence = models.FloatField()
    confidence_basis = models.JSONField(
        default=dict,
        blank=True,
        help_text="Why the confidence: {'features': {name: value}, 'terms': [[name, logit]]}.",
    )
    extractor = models.CharField(max_length=20)
    fingerprint = models.CharField(max_length=64)
    status = models.CharField(
        max_length=10, choices=EdgeProposalStatus.choices, default=EdgeProposalStatus.OPEN
    )
    decided_by = models.CharField(max_length=200, blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True, default="")
    edge = models.ForeignKey(
        "graph.Edge", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    operation = models.ForeignKey(
        "kb.Operation", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-confidence", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["bank", "fingerprint"], name="edgeproposal_unique_statement"
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0) & Q(confidence__lte=1),
                name="edgeproposal_confidence_unit",
            ),
        ]
        indexes = [
            models.Index(fields=["bank", "status", "-confidence", "id"], name="edgeproposal_queue")
        ]

    def __str__(self) -> str:
        return f"{self.from_text} -{self.type.name}-> {self.to_text} ({self.confidence:.2f})"

    @property
    def resolved(self) -> bool:
        return self.from_entry_id is not None and self.to_entry_id is not None


class ExtractionState(models.Model):
    """Per-bank (and per-extractor) watermark of incremental extraction: entries changed after
    ``watermark``, and those whose extraction failed (``pending``), are read by the next run."""

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    extractor = models.CharField(max_length=20)
    watermark = models.DateTimeField(null=True, blank=True)
    pending = models.JSONField(default=list, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_result = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["bank", "extractor"], name="extractionstate_one_per_extractor"
            )
        ]

    def __str__(self) -> str:
        return f"{self.extractor} extraction of {self.bank}: {self.watermark}"
