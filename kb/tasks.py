"""Celery tasks of the core app: thin wrappers over services. They take ids and are idempotent."""

from __future__ import annotations

from celery import shared_task

from kb import audit


@shared_task(name="kb.embed_entries", acks_late=True)
def embed_entries_task(entry_ids: list[int]) -> int:
    """Compute missing or stale vectors for the given entries (no-op when up to date).

    Works in batches of ``KB_EMBED_BATCH_SIZE``, each stored by one statement: a worker lost
    mid-task leaves whole batches done and none half-written, and the redelivered task skips
    what is done (the stored source hash matches) and finishes the rest."""
    from django.conf import settings

    from kb.models import Entry
    from kb.services.embedding import embed_entries

    ids = sorted(set(entry_ids))
    size = max(1, settings.KB_EMBED_BATCH_SIZE)
    stored = 0
    for start in range(0, len(ids), size):
        stored += embed_entries(Entry.objects.filter(pk__in=ids[start : start + size]))
    return stored


@shared_task(name="kb.run_import_job", acks_late=True)
def run_import_job(job_id: int) -> str:
    """Run a queued import job; a job that already finished is left alone."""
    from kb.services.bulk import run_import_job as run

    with audit.acting_as("celery:import"):
        return run(job_id)
