"""Claims: work in progress that other agents must not duplicate (``002_*``: "who is on it").

A claim is live while it is neither released nor expired. The database keeps at most one
unreleased claim per (bank, normalised subject) with a unique partial index; an expired claim
stays unreleased until the next claim on its subject closes it, so correctness never depends
on a cron job: every reader treats ``expires_at <= now`` as ended.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from kb.models import BankOwned, Entry

__all__ = ["Claim"]


class Claim(BankOwned):
    """One agent's (or person's) hold on a subject: free text, or an entry of the bank."""

    subject = models.CharField(max_length=500, help_text="As the claimer wrote it.")
    subject_key = models.CharField(
        max_length=520, help_text="Normalised subject: entry:<short_id> or text:<casefolded>."
    )
    entry = models.ForeignKey(
        Entry,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="claims",
        help_text="The entry the subject names, when it names one.",
    )
    holder = models.CharField(max_length=200)
    note = models.TextField(blank=True, default="")
    since = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    renewed_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    released_by = models.CharField(max_length=200, blank=True, default="")
    created_by = models.CharField(max_length=200, blank=True, default="")
    token = models.ForeignKey(
        "kb.AgentToken",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The token that made the claim: only it (or a curator) renews or releases it. "
        "Empty for a claim made without a token (staff, commands).",
    )

    class Meta:
        ordering = ["-since", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["bank", "subject_key"],
                condition=Q(released_at__isnull=True),
                name="claim_one_unreleased_per_subject",
            ),
            models.CheckConstraint(
                condition=Q(expires_at__gt=models.F("since")), name="claim_expires_after_since"
            ),
        ]
        indexes = [models.Index(fields=["bank", "expires_at"])]

    def __str__(self) -> str:
        return f"{self.subject} — {self.holder}"

    @property
    def is_live(self) -> bool:
        return self.released_at is None and self.expires_at > timezone.now()
