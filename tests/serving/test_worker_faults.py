"""A real Celery worker SIGKILLed mid-task loses nothing and leaves no half-state.

Tasks are acknowledged late: the killed worker's message stays unacknowledged in Redis and a
new worker gets it again once the visibility timeout (3 s here) has passed. An embedding batch
resumes where whole batches stopped; an import that was cut off rolled back whole and runs
again, and its job row says that a first attempt was lost.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from kb.models import Entry, EntryEmbedding, EntryKind, Job, Operation
from kb.services.embedding import _source_hash, dimension_texts, get_embedder
from tests.pg_activity import other_sessions

from .procs import (
    FAULT_BROKER,
    base_env,
    celery_client,
    new_queue,
    start_worker,
    stop,
    table_held,
    wait_for,
)

pytestmark = [
    pytest.mark.celery_worker,
    pytest.mark.xdist_group("serving_procs"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

LOG = Path("/tmp/kb-serving-worker-faults.log")


@pytest.fixture
def fault_queue():
    queue = new_queue()
    with celery_client(FAULT_BROKER, queue):
        yield queue


def worker_env(queue: str, **extra: str) -> dict:
    return base_env(
        CELERY_BROKER_URL=FAULT_BROKER,
        CELERY_TASK_DEFAULT_QUEUE=queue,
        KB_CELERY_VISIBILITY_TIMEOUT="3",
        **extra,
    )


def _writing_backends() -> int:
    """Sessions of other processes on this database inside a transaction that has written."""
    return other_sessions("backend_xid IS NOT NULL")


def _lock_waiters() -> int:
    """Sessions of other processes on this database waiting for a lock."""
    return other_sessions("wait_event_type = 'Lock'")


def test_sigkill_mid_embedding_batch_loses_nothing(fault_queue, bank, settings):
    from kb.tasks import embed_entries_task

    settings.KB_EMBEDDER = "hashing"
    kind = EntryKind.objects.filter(bank__isnull=True).first() or EntryKind.objects.first()
    entries = Entry.objects.bulk_create(
        Entry(
            bank=bank,
            kind=kind,
            title=f"Fact {i}",
            content=f"Fact number {i} of the batch.",
            useful_for=f"Use when checking fact {i}.",
            short_id=f"{i:08x}",
        )
        for i in range(1600)
    )
    ids = [e.pk for e in entries]
    env = worker_env(fault_queue, KB_EMBED_BATCH_SIZE="8")
    first = start_worker(env, fault_queue, log=LOG)
    second = None
    try:
        embed_entries_task.delay(ids)
        in_flight = wait_for(
            lambda: 0 < EntryEmbedding.objects.filter(bank=bank).count() < len(ids),
            timeout=120,
            interval=0.02,
        )
        assert in_flight, "the worker never started the batch"
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        time.sleep(1)
        at_kill = EntryEmbedding.objects.filter(bank=bank).count()
        assert 0 < at_kill < len(ids), "the kill did not land in the middle of the batch"
        # No half-written row: every stored vector set is complete.
        assert not EntryEmbedding.objects.filter(bank=bank, content__isnull=True).exists()
        assert not EntryEmbedding.objects.filter(bank=bank, useful_for__isnull=True).exists()

        second = start_worker(env, fault_queue, log=LOG)
        done = wait_for(
            lambda: EntryEmbedding.objects.filter(bank=bank).count() == len(ids), timeout=180
        )
        assert done, f"only {EntryEmbedding.objects.filter(bank=bank).count()} of {len(ids)}"
    finally:
        stop(first, signal.SIGKILL)
        if second is not None:
            stop(second)
    embedder = get_embedder()
    stored = dict(EntryEmbedding.objects.filter(bank=bank).values_list("entry_id", "source_hash"))
    for entry in Entry.objects.filter(bank=bank):
        assert stored[entry.pk] == _source_hash(embedder.name, dimension_texts(entry))


LINES = 5_000  # COPY-sized: the import takes its set-wise path


def test_sigkill_mid_import_leaves_nothing_and_the_job_reruns_once(fault_queue, bank, client_rw):
    # No keys and no ids: a second run of a committed import would duplicate every entry.
    lines = "\n".join(
        f'{{"type": "entry", "title": "Imported fact {i}", "content": "Imported line {i}.", '
        f'"kind": "fact"}}'
        for i in range(LINES)
    )
    env = worker_env(fault_queue)
    response = client_rw.post(
        f"/api/v1/banks/{bank.slug}/import", data=lines, content_type="application/x-ndjson"
    )
    assert response.status_code == 202, response.content
    job = Job.objects.get(public_id=response.json()["job"])
    first = second = None
    try:
        with table_held("kb_historicalentry"):
            first = start_worker(env, fault_queue, log=LOG)
            assert wait_for(
                lambda: _writing_backends() and _lock_waiters(), timeout=180, interval=0.02
            ), "the import never wrote"
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)
        # Released, the orphaned session finds its client gone and rolls back.
        assert wait_for(lambda: _writing_backends() == 0, timeout=30)
        job.refresh_from_db()
        assert job.status == "running" and job.attempts == 1
        # Rolled back whole: no entry, no operation, no history row of the cut-off import.
        assert not Entry.objects.filter(bank=bank, title__startswith="Imported fact").exists()
        assert not Operation.objects.filter(bank=bank, kind="import").exists()
        assert not Entry.history.filter(bank_id=bank.pk).exists()

        second = start_worker(env, fault_queue, log=LOG)
        assert wait_for(
            lambda: Job.objects.get(pk=job.pk).status in ("succeeded", "failed"), timeout=240
        ), "the redelivered import never finished"
    finally:
        if first is not None:
            stop(first, signal.SIGKILL)
        if second is not None:
            stop(second)
    job.refresh_from_db()
    assert job.status == "succeeded", job.result
    assert job.attempts == 2
    assert job.result["attempts"] == 2 and job.result["interrupted_attempts"] == 1
    assert "earlier attempt" in job.result["note"]
    assert job.result["created"] == LINES
    (op,) = Operation.objects.filter(bank=bank, kind="import")
    assert op.reason == f"import job {job.public_id}"
    imported = Entry.objects.filter(bank=bank, title__startswith="Imported fact")
    assert imported.count() == LINES
    assert Entry.history.filter(bank_id=bank.pk, operation_id=op.pk).count() == LINES
    body = client_rw.get(f"/api/v1/jobs/{job.public_id}").json()
    assert body["status"] == "succeeded" and body["result"]["interrupted_attempts"] == 1
