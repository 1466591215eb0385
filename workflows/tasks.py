"""Celery tasks of the workflows app: thin wrappers over services; they take ids and are
idempotent (a report rebuilt twice is the same report twice)."""

from __future__ import annotations

from celery import shared_task

from kb import audit


@shared_task(name="workflows.regenerate_after_edit", acks_late=True)
def regenerate_after_edit(process_id: int, requested_at: str | None = None) -> str:
    """The debounced rebuild scheduled by edits of a process's entries or edges."""
    from workflows.services.scheduling import run_pending

    with audit.acting_as("celery:workflows"):
        return run_pending(process_id, requested_at)


@shared_task(name="workflows.regenerate_gap_report", acks_late=True)
def regenerate_gap_report(process_id: int, trigger: str = "schedule") -> str:
    """Rebuild one process's report now (a live process only)."""
    from kb.actions.base import Caller
    from kb.models import Entry
    from workflows.actions import regenerate_report
    from workflows.services.subgraph import INACTIVE_STATUSES, PROCESS_KIND

    process = (
        Entry.objects.filter(pk=process_id, kind__name=PROCESS_KIND)
        .exclude(status__in=INACTIVE_STATUSES)
        .select_related("bank")
        .first()
    )
    if process is None:
        return "process gone"
    from kb.services.job_progress import tracked_job

    with (
        audit.acting_as("celery:workflows"),
        tracked_job(process.bank, "gap_report", actor="celery:workflows") as (job, progress),
    ):
        progress.phase(f"building the report of {process.short_id}", total=1)
        built = regenerate_report(Caller.system("celery:workflows"), process, trigger)
        job.result = {
            "process": process.short_id,
            "report": built.report.pk,
            "findings": built.report.finding_count,
        }
        progress(1, 1)
    return f"report {built.report.pk}: {built.report.finding_count} findings"


@shared_task(name="workflows.regenerate_all_gap_reports", acks_late=True)
def regenerate_all_gap_reports() -> int:
    """The beat job: schedule a rebuild of every live process of every bank, one task each."""
    from kb.models import Bank
    from workflows.services.subgraph import processes_of

    count = 0
    for bank in Bank.objects.order_by("pk"):
        for process_id in processes_of(bank).values_list("pk", flat=True):
            regenerate_gap_report.delay(process_id, "schedule")
            count += 1
    return count
