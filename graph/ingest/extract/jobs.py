"""Extraction as a background job: queued by REST and the admin, run by a Celery task, polled
at ``GET /api/v1/jobs/{id}`` (progress is entries read of entries to read)."""

from __future__ import annotations

import json

from celery import shared_task
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from kb import audit
from kb.errors import KbError
from kb.models import Bank, Job, JobStatus

JOB_KIND = "extract_edges"


def queue_extraction(bank: Bank, entries: list[str] | None, extractor: str, actor: str) -> Job:
    """Store the request as a job and run it on the task queue after commit."""
    job = Job.objects.create(
        bank=bank,
        kind=JOB_KIND,
        actor=actor,
        payload=json.dumps({"entries": entries, "extractor": extractor}),
        progress_total=len(entries) if entries is not None else 0,
    )
    transaction.on_commit(lambda: extract_edges_task.delay(job.pk))
    return job


def run_extraction_job(job_id: int) -> str:
    """Run a queued extraction job once; a finished job is left alone (idempotent)."""
    from graph.ingest.extract.run import extract_edges

    job = Job.objects.select_related("bank").get(pk=job_id)
    if job.status in (JobStatus.SUCCEEDED, JobStatus.FAILED):
        return job.status
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, started_at=timezone.now(), attempts=F("attempts") + 1
    )
    request = json.loads(job.payload or "{}")

    def progress(done: int, total: int) -> None:
        step = max(1, total // 100)
        if done == 0 or done == total or done % step == 0:
            Job.objects.filter(pk=job.pk).update(
                phase="extracting", progress_done=done, progress_total=total
            )

    try:
        with audit.acting_as(job.actor or f"job:{JOB_KIND}"):
            run = extract_edges(
                job.bank,
                entries=request.get("entries"),
                extractor=request.get("extractor", "local"),
                progress=progress,
            )
    except KbError as exc:
        Job.objects.filter(pk=job.pk).update(
            status=JobStatus.FAILED,
            errors=[{"line": None, "message": exc.message}],
            finished_at=timezone.now(),
        )
        return JobStatus.FAILED
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.SUCCEEDED,
        phase="done",
        result=run.as_json(),
        errors=[{"line": None, "message": f"{f['entry']}: {f['message']}"} for f in run.failed],
        finished_at=timezone.now(),
    )
    return JobStatus.SUCCEEDED


@shared_task(name="graph.extract_edges", acks_late=True)
def extract_edges_task(job_id: int) -> str:
    """Run an extraction job (idempotent: a finished job is not run again)."""
    return run_extraction_job(job_id)
