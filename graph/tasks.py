"""Celery tasks of the graph app: thin wrappers over services. They take bank ids and are
idempotent (a re-run writes nothing new), so ``acks_late`` redelivery is safe."""

from __future__ import annotations

from celery import shared_task

from kb import audit


def _bank(bank_id: int):
    from kb.models import Bank

    return Bank.objects.filter(pk=bank_id).first()


def _missing(bank_id: int) -> dict:
    return {"bank": bank_id, "error": "bank_not_found"}


@shared_task(name="graph.backfill_citations", acks_late=True)
def backfill_citations_task(bank_id: int, metadata: bool = True) -> dict:
    """Citation backfill (and, unless ``metadata`` is false, the metadata-link backfill)."""
    from graph.ingest.backfill import backfill_citations, backfill_metadata

    bank = _bank(bank_id)
    if bank is None:
        return _missing(bank_id)
    with audit.acting_as("celery:backfill_citations"):
        out = {"bank": bank_id, "citations": backfill_citations(bank).as_json()}
        if metadata:
            out["metadata"] = backfill_metadata(bank).as_json()
    return out


@shared_task(name="graph.parse_headers", acks_late=True)
def parse_headers_task(bank_id: int) -> dict:
    """Header backfill: the relations stated on entries' ``Related:`` lines."""
    from graph.ingest.headers import backfill_headers

    bank = _bank(bank_id)
    if bank is None:
        return _missing(bank_id)
    with audit.acting_as("celery:parse_headers"):
        return {"bank": bank_id, "headers": backfill_headers(bank).as_json()}


def _propose(bank, actor: str, limit: int) -> dict:
    """The ``ProposeMerges`` action as ``actor`` through the job queue: the run's counts."""
    from graph.actions.curation import ProposeMerges
    from kb.actions.base import Caller
    from kb.actions.staff import execute_as

    caller = Caller.system(actor, via="job")
    return execute_as(caller, ProposeMerges, bank, body={"limit": limit}).as_json()


@shared_task(name="graph.propose_merges", acks_late=True)
def propose_merges_task(bank_id: int, limit: int = 200, job_id: int | None = None) -> dict:
    """Run ``ProposeMerges`` (never merges): for the job ``QueueMergeProposals`` queued
    (run once whatever the queue delivers, as who queued it), or, called without a job, as
    ``celery:propose_merges`` with a job row of its own."""
    from django.utils import timezone

    from kb.models import Job, JobStatus
    from kb.services.job_progress import JobProgress, tracked_job
    from kb.services.job_runs import job_run

    bank = _bank(bank_id)
    if bank is None:
        return _missing(bank_id)
    if job_id is None:
        actor = "celery:propose_merges"
        with tracked_job(bank, "merge_proposals", actor=actor) as (job, progress):
            progress.phase("finding likely duplicates", total=1)
            job.result = _propose(bank, actor, limit)
            progress(1, 1)
        return {"bank": bank_id, **job.result}
    with job_run(job_id) as job:
        if job is None:
            return {"bank": bank_id, "job": job_id, "status": "not run (finished or running)"}
        progress = JobProgress(job.pk)
        progress.phase("finding likely duplicates", total=1)
        try:
            result = {**job.result, **_propose(bank, job.actor or "job:propose_merges", limit)}
        except Exception as exc:
            Job.objects.filter(pk=job.pk).update(
                status=JobStatus.FAILED,
                errors=[{"line": None, "message": str(exc)[:2000]}],
                finished_at=timezone.now(),
            )
            raise
        progress(1, 1)
        Job.objects.filter(pk=job.pk).update(
            status=JobStatus.SUCCEEDED, phase="done", result=result, finished_at=timezone.now()
        )
    return {"bank": bank_id, **result}


from graph.analytics import tasks as analytics_tasks  # noqa: E402,F401  (autodiscovery only loads tasks.py)
from graph.ingest.extract import jobs as _extraction_jobs  # noqa: E402,F401  (its Celery task)
