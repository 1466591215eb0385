"""Workflow gap reports: snapshots of what is missing in a process, and the findings managers work.

A :class:`GapReport` is one evaluation of the six rules over a process. A :class:`Finding` is
one hole, identified by process + rule + its sorted entry ids (``fingerprint``): the same hole
found again in a later report is the same row, so its status, assignee and history carry over.
Every change of a finding (by a manager or by the system) is a :class:`FindingEvent`.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from kb.models import BankOwned, Entry


class Rule(models.TextChoices):
    DEAD_END = "dead_end", "dead end"
    SINGLE_BRANCH_DECISION = "single_branch_decision", "decision with one branch"
    UNPRODUCED_REQUIREMENT = "unproduced_requirement", "requirement nothing produces"
    UNOWNED_STEP = "unowned_step", "step without an owner"
    UNREACHABLE_STEP = "unreachable_step", "unreachable step"
    LOOP_WITHOUT_EXIT = "loop_without_exit", "loop without exit"


class Severity(models.TextChoices):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class FindingStatus(models.TextChoices):
    OPEN = "open"
    ACKNOWLEDGED = "acknowledged"
    ACCEPTED = "accepted"
    RESOLVED = "resolved"


class ReportTrigger(models.TextChoices):
    SCHEDULE = "schedule"
    ON_DEMAND = "on_demand"
    EDIT = "edit"
    FIRST_VIEW = "first_view"


def finding_fingerprint(process_short_id: str, rule: str, entry_ids: list[str]) -> str:
    """The stable identity of a finding: process + rule + sorted entry ids."""
    raw = "|".join([process_short_id, rule, ",".join(sorted(entry_ids))])
    return hashlib.sha1(raw.encode("utf-8")).hexdigest()


class GapReport(BankOwned):
    """One evaluation of the rules over a process: a snapshot with its counts at that time."""

    process = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="+")
    generated_at = models.DateTimeField(default=timezone.now)
    trigger = models.CharField(
        max_length=12, choices=ReportTrigger.choices, default=ReportTrigger.ON_DEMAND
    )
    actor = models.CharField(max_length=200, blank=True, default="")
    step_count = models.PositiveIntegerField(default=0)
    finding_count = models.PositiveIntegerField(default=0)
    open_count = models.PositiveIntegerField(
        default=0, help_text="Findings with status open when the report was generated."
    )
    counts_by_rule = models.JSONField(default=dict, blank=True)
    resolved_count = models.PositiveIntegerField(
        default=0, help_text="Findings of earlier reports this one closed automatically."
    )
    took_ms = models.FloatField(default=0.0)
    findings = models.ManyToManyField("Finding", related_name="reports", blank=True)

    class Meta:
        ordering = ["-generated_at", "-id"]
        indexes = [models.Index(fields=["process", "-generated_at"], name="gapreport_latest")]
        permissions = [("view_gap_reports", "Can view workflow gap reports (manager pages)")]

    def __str__(self) -> str:
        return f"report #{self.pk} of {self.process_id} ({self.finding_count} findings)"


class Finding(BankOwned):
    """A hole in a process. Status, assignee and comment are the managers'; the rest is found."""

    process = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="+")
    rule = models.CharField(max_length=32, choices=Rule.choices)
    fingerprint = models.CharField(max_length=40)
    entries = ArrayField(
        models.CharField(max_length=8), default=list, help_text="Short ids the finding is about."
    )
    related = ArrayField(
        models.CharField(max_length=8),
        default=list,
        blank=True,
        help_text="Short ids that explain it (e.g. the steps needing a missing requirement).",
    )
    message = models.TextField()
    severity = models.CharField(max_length=8, choices=Severity.choices, default=Severity.MEDIUM)
    status = models.CharField(
        max_length=12, choices=FindingStatus.choices, default=FindingStatus.OPEN
    )
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assigned_findings",
    )
    comment = models.TextField(blank=True, default="", help_text="The latest comment.")
    first_seen_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)
    status_changed_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)
    last_report = models.ForeignKey(
        GapReport, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["process", "rule", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["process", "fingerprint"], name="finding_unique_per_process"
            ),
        ]
        indexes = [models.Index(fields=["bank", "process", "status"])]

    def __str__(self) -> str:
        return f"{self.rule} {','.join(self.entries)} ({self.status})"


class FindingEventKind(models.TextChoices):
    DETECTED = "detected"
    STATUS = "status"
    ASSIGNED = "assigned"
    COMMENT = "comment"
    AUTO_RESOLVED = "auto_resolved"
    REOPENED = "reopened"


class FindingEvent(models.Model):
    """One audited change of a finding: who, when, what changed and why."""

    finding = models.ForeignKey(Finding, on_delete=models.CASCADE, related_name="events")
    bank = models.ForeignKey("kb.Bank", on_delete=models.CASCADE, related_name="+")
    at = models.DateTimeField(default=timezone.now)
    actor = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=FindingEventKind.choices)
    from_status = models.CharField(max_length=12, blank=True, default="")
    to_status = models.CharField(max_length=12, blank=True, default="")
    assignee = models.CharField(max_length=150, blank=True, default="")
    comment = models.TextField(blank=True, default="")
    report = models.ForeignKey(
        GapReport, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.kind} by {self.actor} at {self.at:%Y-%m-%d %H:%M}"


class PendingRegeneration(BankOwned):
    """The debounce marker: a regeneration of this process is already scheduled.

    The first edit of a burst creates it and schedules one task; later edits see it and do
    nothing; the task deletes it before reading the graph.
    """

    process = models.OneToOneField(Entry, on_delete=models.CASCADE, related_name="+")
    requested_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"regenerate {self.process_id} (since {self.requested_at:%H:%M:%S})"
