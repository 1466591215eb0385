"""Celery tasks of the core app: thin wrappers over services. They take ids and are idempotent."""

from __future__ import annotations

from celery import shared_task

from kb import audit


@shared_task(name="kb.embed_entries", acks_late=True)
def embed_entries_task(entry_ids: list[int], job_id: int | None = None) -> int:
    """Compute missing or stale vectors for the given entries (no-op when up to date), in
    batches; with ``job_id``, the job records progress and the result."""
    from kb.services.embedding import run_embedding_job

    return run_embedding_job(entry_ids, job_id)


@shared_task(name="kb.run_import_job", acks_late=True)
def run_import_job(job_id: int) -> str:
    """Run a queued import job; a job that already finished is left alone."""
    from kb.services.bulk import run_import_job as run

    with audit.acting_as("celery:import"):
        return run(job_id)
