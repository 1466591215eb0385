"""Tasks executed by a real Celery worker over Redis (not eagerly in-process)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import kombu.pools
import pytest
import redis
from django.db import connection

from config.celery import app as celery_app
from kb.models import Entry, EntryEmbedding

ROOT = Path(__file__).resolve().parents[2]
BROKER = os.environ.get("KB_TEST_BROKER_URL", "redis://127.0.0.1:6379/14")

pytestmark = [
    pytest.mark.celery_worker,
    pytest.mark.xdist_group("celery_worker"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


@pytest.fixture(scope="module")
def celery_worker_process(django_db_setup, django_db_blocker):
    """A real worker process on Redis, consuming a queue of its own, on the test database.

    Module-scoped: Celery caches its queue routing once used, so one queue serves the module.
    """
    redis.Redis.from_url(BROKER).ping()  # fails loudly if Redis is not there
    queue = f"kbtest-{uuid.uuid4().hex[:8]}"
    env = dict(
        os.environ,
        CELERY_BROKER_URL=BROKER,
        CELERY_TASK_DEFAULT_QUEUE=queue,
        KB_DATABASE_NAME=connection.settings_dict["NAME"],
        KB_EMBEDDER="hashing",  # this test is about the task queue, not retrieval quality
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    if os.environ.get("DATABASE_URL"):
        env["DATABASE_URL"] = (
            os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + connection.settings_dict["NAME"]
        )
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-P",
            "solo",
            "-Q",
            queue,
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    previous = {  # only what is changed below (dict(conf) can trip over celery's internals)
        key: getattr(celery_app.conf, key)
        for key in ("broker_url", "task_always_eager", "task_default_queue")
    }
    celery_app.conf.update(broker_url=BROKER, task_always_eager=False, task_default_queue=queue)
    _reset_celery_caches()
    try:
        yield worker
    finally:
        celery_app.conf.update(
            broker_url=previous.get("broker_url"),
            task_always_eager=previous.get("task_always_eager"),
            task_default_queue=previous.get("task_default_queue"),
        )
        _reset_celery_caches()
        worker.terminate()
        try:
            output, _ = worker.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            output, _ = worker.communicate()
        if output.strip():
            print("worker output:\n" + output[-4000:])


@pytest.fixture(autouse=True)
def _worker_idle_before_the_flush(celery_worker_process):
    """After each test, wait until the worker has no task queued and no open transaction
    (for half a second in a row, up to a minute): what a test's writes queued after the
    awaited job (the entries' vectors, a layout refresh) otherwise ran while the test's
    teardown truncated every table, and the two deadlocked once."""
    from tests.pg_activity import other_sessions

    yield
    queue = redis.Redis.from_url(BROKER)
    name = celery_app.conf.task_default_queue
    deadline, quiet_since = time.monotonic() + 60, None
    while time.monotonic() < deadline:
        busy = queue.llen(name) or other_sessions("state <> 'idle'")
        if busy:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= 0.5:
            return
        time.sleep(0.05)


def _reset_celery_caches() -> None:
    """Celery caches queues, routes and the connection pool on first use; drop them so a
    configuration change (broker, default queue) takes effect in this process."""
    for attr in ("queues", "default_queue", "router"):
        celery_app.amqp.__dict__.pop(attr, None)
    celery_app.amqp._rtable = None
    celery_app.amqp._producer_pool = None
    if celery_app._pool is not None:
        celery_app._pool.force_close_all()
        celery_app._pool = None
    kombu.pools.reset()


def wait_for(predicate, timeout: float = 180.0, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


def test_embedding_task_runs_on_a_real_worker(celery_worker_process, bank, client_rw):
    response = client_rw.post(
        f"/api/v1/banks/{bank.slug}/entries",
        {
            "title": "Worker-made vectors",
            "content": "Embedded by the Celery worker.",
            "useful_for": "Testing.",
            "lifetime": {"durable": True},
        },
        format="json",
    )
    assert response.status_code == 201
    entry = Entry.objects.get(bank=bank, short_id=response.json()["id"])
    # A learning's vectors are stored by its request (one model pass); an edit's are left to
    # the background job: the request commits and returns, and the worker (whose embedder is
    # the hashing one) makes them.
    edited = client_rw.patch(
        f"/api/v1/banks/{bank.slug}/entries/{entry.short_id}",
        {"content": "Embedded again, by the Celery worker."},
        format="json",
    )
    assert edited.status_code == 200
    embedding = wait_for(
        lambda: EntryEmbedding.objects.filter(entry=entry, model="hashing-test-only").first()
    )
    assert embedding is not None, "the worker never embedded the entry"
    assert embedding.model == "hashing-test-only"
    assert embedding.content is not None and len(embedding.content) == 384
    assert celery_worker_process.poll() is None, "the worker died"


def test_import_job_runs_on_a_real_worker_with_progress(celery_worker_process, bank, client_rw):
    lines = "\n".join(
        f'{{"type": "entry", "key": "job:{i}", "title": "Imported {i}", "content": "Line {i}.", "kind": "fact"}}'
        for i in range(30)
    )
    response = client_rw.post(
        f"/api/v1/banks/{bank.slug}/import", data=lines, content_type="application/x-ndjson"
    )
    assert response.status_code == 202, response.content
    job_id = response.json()["job"]

    def finished():
        body = client_rw.get(f"/api/v1/jobs/{job_id}").json()
        return body if body["status"] in ("succeeded", "failed") else None

    body = wait_for(finished)
    assert body is not None, (
        f"the import job never finished: {client_rw.get(f'/api/v1/jobs/{job_id}').json()}"
    )
    assert body["status"] == "succeeded", body
    assert body["progress"] == {"done": 30, "total": 30, "phase": "done"}
    assert body["result"]["created"] == 30
    assert Entry.objects.filter(bank=bank, key__startswith="job:").count() == 30


def test_import_bank_command_waits_for_the_workers_embedding_job(
    celery_worker_process, bank, tmp_path, settings
):
    """With a broker, `import_bank --wait` hands the vectors to the worker and follows its job
    with a bar until the vectors have landed."""
    import io
    import json

    from django.core.management import call_command

    from kb.models import Job

    settings.CELERY_TASK_ALWAYS_EAGER = False
    path = tmp_path / "waited.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(
                {
                    "type": "entry",
                    "key": f"waited:{i}",
                    "title": f"Waited {i}",
                    "content": f"Embedded by the worker {i}.",
                    "kind": "fact",
                }
            )
            for i in range(40)
        )
    )
    out, err = io.StringIO(), io.StringIO()
    call_command("import_bank", bank.slug, str(path), "--wait", stdout=out, stderr=err)
    job = Job.objects.get(bank=bank, kind="embed")
    assert f"Embedding job {job.public_id}: 40 entries" in out.getvalue()
    assert f"Embedding job {job.public_id} succeeded" in out.getvalue()
    assert "No broker" not in out.getvalue()
    # The bar followed the job to its end (a fast worker may finish a phase between polls).
    assert "done: 100%" in err.getvalue() and "40/40" in err.getvalue()
    assert (job.status, job.phase, job.progress_done) == ("succeeded", "done", 40)
    assert EntryEmbedding.objects.filter(bank=bank, model="hashing-test-only").count() == 40
