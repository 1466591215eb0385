"""Celery tasks of the core app: thin wrappers over services. They take ids and are idempotent."""

from __future__ import annotations

from celery import shared_task

from kb import audit


@shared_task(name="kb.embed_entries", acks_late=True)
def embed_entries_task(entry_ids: list[int], job_id: int | None = None) -> int:
    """Compute missing or stale vectors for the given entries (no-op when up to date).

    Works in batches of ``KB_EMBED_BATCH_SIZE``, each stored by one statement: a worker lost
    mid-task leaves whole batches done and none half-written, and the redelivered task skips
    what is done (the stored source hash matches) and finishes the rest. With ``job_id``, the
    job records progress and the result. Banks that passed the size threshold get their own
    vector indexes queued."""
    from kb.models import Entry
    from kb.services.embedding import run_embedding_job
    from kb.services.vector_index import banks_needing_indexes

    ids = sorted(set(entry_ids))
    stored = run_embedding_job(ids, job_id)
    bank_ids = set(Entry.objects.filter(pk__in=ids).values_list("bank_id", flat=True).distinct())
    for bank_id in banks_needing_indexes(bank_ids):
        ensure_bank_vector_indexes_task.delay(bank_id)
    return stored


# A job found running under another session (its advisory lock held) is looked at again this
# many seconds later, for up to an hour: after a worker's cold shutdown handed the task back,
# the cancelled run's database session can outlive it until its statement ends, and the run
# given the task back must not drop it meanwhile.
BUSY_RETRY_SECONDS = 5
BUSY_RETRIES = 720


@shared_task(name="kb.run_import_job", acks_late=True, bind=True, max_retries=BUSY_RETRIES)
def run_import_job(self, job_id: int, restore_deleted: bool = False) -> str:
    """Run a queued import job; a job that already finished is left alone, and one still
    running elsewhere is looked at again later (see ``BUSY_RETRY_SECONDS``)."""
    from kb.services.import_jobs import run_import_job as run

    with audit.acting_as("celery:import"):
        status = run(job_id, restore_deleted=restore_deleted)
    if status in ("queued", "running") and not self.request.is_eager:
        raise self.retry(countdown=BUSY_RETRY_SECONDS)
    return status


@shared_task(
    name="kb.ensure_bank_vector_indexes", acks_late=True, bind=True, max_retries=BUSY_RETRIES
)
def ensure_bank_vector_indexes_task(self, bank_id: int) -> list[str]:
    """Give a bank past the threshold its own HNSW and lexical indexes (idempotent;
    CONCURRENTLY). Found busy (another session builds them: a second job, or the statement of
    a worker lost mid-build, which runs on until it ends), looked at again later (see
    ``BUSY_RETRY_SECONDS``): what that build leaves unusable is then built here."""
    from django.db import connection

    from kb.models import Bank
    from kb.services.vector_index import ensure_bank_vector_indexes

    bank = Bank.objects.filter(pk=bank_id).first()
    if bank is None:
        return []
    with audit.acting_as("celery:vector_indexes"):
        report = ensure_bank_vector_indexes(bank, concurrently=not connection.in_atomic_block)
    if report.busy and not self.request.is_eager:
        raise self.retry(countdown=BUSY_RETRY_SECONDS)
    return report.created
