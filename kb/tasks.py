"""Celery tasks of the core app: thin wrappers over services. They take ids and are idempotent."""

from __future__ import annotations

from celery import shared_task

from kb import audit


@shared_task(name="kb.embed_entries", acks_late=True)
def embed_entries_task(entry_ids: list[int]) -> int:
    """Compute missing or stale vectors for the given entries (no-op when up to date)."""
    from kb.models import Entry
    from kb.services.embedding import embed_entries
    from kb.services.vector_index import banks_needing_indexes

    entries = Entry.objects.filter(pk__in=entry_ids)
    done = embed_entries(entries)
    bank_ids = set(entries.values_list("bank_id", flat=True).distinct())
    for bank_id in banks_needing_indexes(bank_ids):
        ensure_bank_vector_indexes_task.delay(bank_id)
    return done


@shared_task(name="kb.run_import_job", acks_late=True)
def run_import_job(job_id: int) -> str:
    """Run a queued import job; a job that already finished is left alone."""
    from kb.services.bulk import run_import_job as run

    with audit.acting_as("celery:import"):
        return run(job_id)


@shared_task(name="kb.ensure_bank_vector_indexes", acks_late=True)
def ensure_bank_vector_indexes_task(bank_id: int) -> list[str]:
    """Give a bank past the threshold its own HNSW indexes (idempotent; CONCURRENTLY)."""
    from django.db import connection

    from kb.models import Bank
    from kb.services.vector_index import ensure_bank_vector_indexes

    bank = Bank.objects.filter(pk=bank_id).first()
    if bank is None:
        return []
    return ensure_bank_vector_indexes(bank, concurrently=not connection.in_atomic_block).created
