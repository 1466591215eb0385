"""Merge proposals: candidate duplicate pairs waiting for a curator (``004_*`` 12.4)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from kb.models import BankOwned, Entry


class ProposalStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    UNCLEAR = "unclear"


class MergeProposal(BankOwned):
    """A candidate duplicate pair found by similarity, waiting for a curator's decision."""

    keep = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="+")
    away = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="+")
    score = models.FloatField()
    reasons = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=10, choices=ProposalStatus.choices, default=ProposalStatus.PENDING
    )
    decided_by = models.CharField(max_length=200, blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    operation = models.ForeignKey(
        "kb.Operation", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-score"]
        constraints = [
            models.UniqueConstraint(fields=["bank", "keep", "away"], name="proposal_unique_pair"),
            models.CheckConstraint(
                condition=~Q(keep=models.F("away")), name="proposal_two_entries"
            ),
        ]

    def __str__(self) -> str:
        return f"“{self.away.title}” into “{self.keep.title}” ({self.score:.2f})"
