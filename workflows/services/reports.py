"""Build and read gap reports: evaluate the rules, persist a snapshot, carry findings over.

Guarantees of :func:`build_report`:

* a finding found again (same process, rule and sorted entry ids) is the same row: its status,
  assignee, comment and history carry over; its message is refreshed;
* a finding of an earlier report that is no longer found is resolved automatically, with a
  ``auto_resolved`` event naming the report;
* a finding that was resolved and is found again is reopened, with a ``reopened`` event;
* concurrent builds of one process are serialised (a transaction-scoped advisory lock).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.db.models import Count, F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from kb import audit
from kb.models import Bank, Entry
from workflows.models import (
    Finding,
    FindingEvent,
    FindingEventKind,
    FindingStatus,
    GapReport,
    ReportTrigger,
    finding_fingerprint,
)
from workflows.services.rules import Gap, evaluate
from workflows.services.subgraph import ProcessGraph, load_process_graph, processes_of

REPORTS_KEPT = 50  # snapshots kept per process; older ones are pruned (findings stay)
TREND_LENGTH = 8
SYSTEM_ACTOR = "system:gap-report"
_LOCK_NAMESPACE = 0x57F1  # advisory-lock namespace of gap-report builds


@dataclass
class BuiltReport:
    """A report just built, with the graph it was built from (for the diagram)."""

    report: GapReport
    graph: ProcessGraph
    created: int = 0
    reopened: int = 0
    auto_resolved: int = 0


def _lock_process(process_pk: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_NAMESPACE, process_pk])


def build_report(
    bank: Bank,
    process: Entry,
    *,
    trigger: str = ReportTrigger.ON_DEMAND,
    actor: str | None = None,
) -> BuiltReport:
    """Evaluate every rule over ``process`` now and persist the snapshot (see module doc)."""
    if process.bank_id != bank.pk:
        raise ValueError("The process belongs to another bank.")
    actor = actor or audit.current().actor or SYSTEM_ACTOR
    started = time.perf_counter()
    with transaction.atomic():
        _lock_process(process.pk)
        graph = load_process_graph(bank, process)
        gaps = evaluate(graph)
        now = timezone.now()
        report = GapReport.objects.create(
            bank=bank,
            process=process,
            generated_at=now,
            trigger=trigger,
            actor=actor,
            step_count=len(graph.steps),
        )
        outcome = _persist_findings(bank, process, report, gaps, now)
        findings = list(report.findings.values_list("rule", "status"))
        report.finding_count = len(findings)
        report.open_count = sum(1 for _, status in findings if status == FindingStatus.OPEN)
        report.counts_by_rule = dict(Counter(rule for rule, _ in findings))
        report.resolved_count = outcome.auto_resolved
        report.took_ms = round((time.perf_counter() - started) * 1000, 2)
        report.save(
            update_fields=[
                "finding_count",
                "open_count",
                "counts_by_rule",
                "resolved_count",
                "took_ms",
            ]
        )
        _prune(process)
    return BuiltReport(report, graph, outcome.created, outcome.reopened, outcome.auto_resolved)


@dataclass
class _Outcome:
    created: int = 0
    reopened: int = 0
    auto_resolved: int = 0


@dataclass
class _Plan:
    """What a report writes: new findings, changed ones, those found again, those closed."""

    to_create: list[Finding] = field(default_factory=list)
    changed: list[Finding] = field(default_factory=list)  # message, severity, related, reopened
    present: list[int] = field(default_factory=list)  # ids of existing findings found again
    resolved: list[int] = field(default_factory=list)
    events: list[FindingEvent] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    reopened: int = 0


def _persist_findings(
    bank: Bank, process: Entry, report: GapReport, gaps: list[Gap], now
) -> _Outcome:
    """Match gaps to findings by fingerprint and write only what changed (set-based)."""
    existing = {f.fingerprint: f for f in Finding.objects.filter(bank=bank, process=process)}
    plan = _Plan()
    for gap in gaps:
        fingerprint = finding_fingerprint(process.short_id, gap.rule, list(gap.entries))
        if fingerprint in plan.seen:
            continue
        plan.seen.add(fingerprint)
        finding = existing.get(fingerprint)
        if finding is None:
            plan.to_create.append(_new_finding(bank, process, report, gap, fingerprint, now))
        else:
            _found_again(plan, finding, gap, report, now)
    for fingerprint, finding in existing.items():
        if fingerprint in plan.seen or finding.status == FindingStatus.RESOLVED:
            continue
        plan.events.append(
            _event(
                finding,
                FindingEventKind.AUTO_RESOLVED,
                report,
                now,
                to_status=FindingStatus.RESOLVED,
                comment=f"No longer found in report #{report.pk}: the gap was closed.",
            )
        )
        plan.resolved.append(finding.pk)
    created = _write_plan(plan, report, now)
    return _Outcome(len(created), plan.reopened, len(plan.resolved))


def _new_finding(
    bank: Bank, process: Entry, report: GapReport, gap: Gap, fingerprint: str, now
) -> Finding:
    return Finding(
        bank=bank,
        process=process,
        rule=gap.rule,
        fingerprint=fingerprint,
        entries=list(gap.entries),
        related=list(gap.related),
        message=gap.message,
        severity=gap.severity,
        first_seen_at=now,
        last_seen_at=now,
        status_changed_at=now,
        last_report=report,
    )


def _found_again(plan: _Plan, finding: Finding, gap: Gap, report: GapReport, now) -> None:
    """An existing finding found again: its words refreshed; reopened if it was resolved."""
    plan.present.append(finding.pk)
    fresh = (gap.message, gap.severity, list(gap.related))
    dirty = (finding.message, finding.severity, list(finding.related)) != fresh
    finding.message, finding.severity, finding.related = fresh
    if finding.status == FindingStatus.RESOLVED:
        plan.events.append(
            _event(
                finding,
                FindingEventKind.REOPENED,
                report,
                now,
                to_status=FindingStatus.OPEN,
                comment=f"Found again in report #{report.pk}.",
            )
        )
        finding.status = FindingStatus.OPEN
        finding.status_changed_at = now
        finding.resolved_at = None
        plan.reopened += 1
        dirty = True
    if dirty:
        plan.changed.append(finding)


def _write_plan(plan: _Plan, report: GapReport, now) -> list[Finding]:
    """The plan in a handful of set-wise statements; returns the findings created."""
    created = Finding.objects.bulk_create(plan.to_create, batch_size=1000)
    plan.events.extend(
        _event(f, FindingEventKind.DETECTED, report, now, from_status="", to_status=f.status)
        for f in created
    )
    if plan.changed:
        Finding.objects.bulk_update(
            plan.changed,
            ["message", "severity", "related", "status", "status_changed_at", "resolved_at"],
            batch_size=500,
        )
    if plan.present:
        Finding.objects.filter(pk__in=plan.present).update(last_seen_at=now, last_report=report)
    if plan.resolved:
        Finding.objects.filter(pk__in=plan.resolved).update(
            status=FindingStatus.RESOLVED, status_changed_at=now, resolved_at=now
        )
    FindingEvent.objects.bulk_create(plan.events, batch_size=1000)
    GapReport.findings.through.objects.bulk_create(
        [
            GapReport.findings.through(gapreport_id=report.pk, finding_id=pk)
            for pk in [*(f.pk for f in created), *plan.present]
        ],
        batch_size=2000,
    )
    return created


def _event(finding: Finding, kind: str, report: GapReport | None, now, **fields) -> FindingEvent:
    return FindingEvent(
        finding=finding,
        bank_id=finding.bank_id,
        at=now,
        actor=SYSTEM_ACTOR,
        kind=kind,
        report=report,
        **{"from_status": finding.status, **fields},
    )


def _prune(process: Entry) -> None:
    keep = GapReport.objects.filter(process=process).values_list("pk", flat=True)[:REPORTS_KEPT]
    GapReport.objects.filter(process=process).exclude(pk__in=list(keep)).delete()


# --- reading -----------------------------------------------------------------------------------


def latest_report(bank: Bank, process: Entry) -> GapReport | None:
    return (
        GapReport.objects.filter(bank=bank, process=process)
        .order_by("-generated_at", "-id")
        .first()
    )


def ensure_report(bank: Bank, process: Entry, *, actor: str | None = None) -> GapReport:
    """The latest report of ``process``, building the first one if there is none yet."""
    report = latest_report(bank, process)
    if report is None:
        report = build_report(bank, process, trigger=ReportTrigger.FIRST_VIEW, actor=actor).report
    return report


def report_findings(report: GapReport, *, rule: str = "", status: str = "") -> list[Finding]:
    """The findings of ``report`` with their current status, most severe first."""
    qs = report.findings.select_related("assignee")
    if rule:
        qs = qs.filter(rule=rule)
    if status:
        qs = qs.filter(status=status)
    severity = {"high": 0, "medium": 1, "low": 2}
    return sorted(qs, key=lambda f: (severity.get(f.severity, 3), f.rule, f.entries))


@dataclass
class ProcessSummary:
    """A process as the overview lists it."""

    process: Entry
    report: GapReport | None
    open_findings: int = 0
    acknowledged: int = 0
    accepted: int = 0
    resolved: int = 0
    trend: list[int] = field(default_factory=list)  # open counts of the last reports, oldest first

    @property
    def generated_at(self):
        return self.report.generated_at if self.report else None


def process_overview(bank: Bank, *, build_missing: bool = False, actor: str | None = None):
    """Every live process of ``bank`` with its latest report, status counts and trend.

    Four queries whatever the number of processes (plus one build per process that has no
    report yet, when ``build_missing``).
    """
    processes = list(processes_of(bank))
    if build_missing:
        have = set(
            GapReport.objects.filter(bank=bank, process__in=processes).values_list(
                "process_id", flat=True
            )
        )
        for process in processes:
            if process.pk not in have:
                build_report(bank, process, trigger=ReportTrigger.FIRST_VIEW, actor=actor)
    ranked = (
        GapReport.objects.filter(bank=bank, process__in=processes)
        .annotate(
            rank=Window(
                RowNumber(),
                partition_by=[F("process_id")],
                order_by=[F("generated_at").desc(), F("id").desc()],
            )
        )
        .filter(rank__lte=TREND_LENGTH)
        .order_by("process_id", "-generated_at", "-id")
    )
    recent: dict[int, list[GapReport]] = {}
    for report in ranked:
        recent.setdefault(report.process_id, []).append(report)
    latest_ids = [reports[0].pk for reports in recent.values()]
    counts: dict[int, dict[str, int]] = {}
    rows = (
        GapReport.findings.through.objects.filter(gapreport_id__in=latest_ids)
        .values("gapreport_id", "finding__status")
        .annotate(n=Count("id"))
    )
    for row in rows:
        counts.setdefault(row["gapreport_id"], {})[row["finding__status"]] = row["n"]
    out = []
    for process in processes:
        reports = recent.get(process.pk, [])
        latest = reports[0] if reports else None
        by_status = counts.get(latest.pk, {}) if latest else {}
        out.append(
            ProcessSummary(
                process=process,
                report=latest,
                open_findings=by_status.get(FindingStatus.OPEN, 0),
                acknowledged=by_status.get(FindingStatus.ACKNOWLEDGED, 0),
                accepted=by_status.get(FindingStatus.ACCEPTED, 0),
                resolved=by_status.get(FindingStatus.RESOLVED, 0),
                trend=[r.open_count for r in reversed(reports)],
            )
        )
    return out


def open_counts(report: GapReport) -> dict[str, int]:
    """Current status counts of the findings of ``report``."""
    rows = report.findings.values("status").annotate(n=Count("id"))
    counts = {status: 0 for status in FindingStatus.values}
    counts.update({row["status"]: row["n"] for row in rows})
    return counts
