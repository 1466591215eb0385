"""Beyond one machine, on this one: two web processes (gunicorn + uvicorn on two loopback
ports, as behind any load balancer), two Celery workers on one Redis queue, one PostgreSQL
with a read replica configured (a read-only session on the same database). Concurrent writes
and an import go through both processes; nothing is lost, duplicated or misrouted."""

from __future__ import annotations

import random
import threading
import time
from urllib.parse import quote

import httpx
import pytest
from django.db import connection

from kb.models import Entry, EntryEmbedding, Job, Operation
from kb.services.tokens import create_token
from tests.pg_activity import other_sessions

from .procs import (
    FAULT_BROKER,
    base_env,
    free_port,
    new_queue,
    start_web,
    start_worker,
    stop,
    wait_for,
)

pytestmark = [
    pytest.mark.celery_worker,
    pytest.mark.xdist_group("serving_procs"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def replica_url() -> str:
    """The test database again, as a read-only session named kb-replica."""
    connection.ensure_connection()
    settings = connection.settings_dict
    options = quote("-c default_transaction_read_only=on")
    return (
        f"postgres://postgres@/{settings['NAME']}?host={quote(settings['HOST'])}"
        f"&application_name=kb-replica&options={options}"
    )


def replica_sessions() -> int:
    return other_sessions("application_name = 'kb-replica'")


def test_two_web_processes_and_two_workers_share_one_database(
    bank, make_entry, hashing_embedder, tmp_path
):
    hub = make_entry("Checkout service", key="service:checkout")
    _, token = create_token("fleet-agent", [bank], "read,write,curate")
    _, reader = create_token("fleet-reader", [bank], "read")
    queue = new_queue()
    env = base_env(
        CELERY_BROKER_URL=FAULT_BROKER,
        CELERY_TASK_DEFAULT_QUEUE=queue,
        DATABASE_REPLICA_URLS=replica_url(),
        KB_CACHE_URL=FAULT_BROKER,
    )
    procs = []
    try:
        ports = [free_port(), free_port()]
        for port in ports:
            procs.append(start_web(env, port, log=tmp_path / f"web-{port}.log"))
        for n in range(2):
            procs.append(start_worker(env, queue, log=tmp_path / f"worker-{n}.log"))
        urls = [f"http://127.0.0.1:{port}" for port in ports]
        headers = {"Authorization": f"Bearer {token}"}
        acknowledged: list[str] = []
        answers: list[int] = []
        lock = threading.Lock()

        def agent(n: int) -> None:
            rng = random.Random(n)
            with httpx.Client(headers=headers, timeout=60) as client:
                for i in range(6):
                    url = urls[(n + i) % 2]  # round robin, as a load balancer would
                    body = {
                        "title": f"Fleet note {n}-{i}",
                        "content": f"Checkout retries are safe after a 409 ({n}-{i}).",
                        "useful_for": "Use when a checkout write conflicts.",
                        "lifetime": {"durable": True},
                        "connections": [
                            {
                                "id": hub.short_id,
                                "relation": "see_also",
                                "note": "The service this note is about.",
                            }
                        ],
                    }
                    for _attempt in range(5):
                        r = client.post(f"{url}/api/v1/banks/{bank.slug}/entries", json=body)
                        if r.status_code != 409:
                            break
                        time.sleep(float(r.headers.get("Retry-After", "1")) * rng.random())
                    with lock:
                        answers.append(r.status_code)
                        if r.status_code == 201:
                            acknowledged.append(r.json()["id"])
                    # Read it back through the other process at once.
                    back = client.get(
                        f"{urls[(n + i + 1) % 2]}/api/v1/banks/{bank.slug}/entries/"
                        f"{r.json().get('id', 'none')}"
                    )
                    with lock:
                        answers.append(back.status_code)

        threads = [threading.Thread(target=agent, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        lines = "\n".join(
            f'{{"type": "entry", "key": "fleet:{i}", "title": "Fleet import {i}", '
            f'"content": "Imported through process A, line {i}.", "kind": "fact"}}'
            for i in range(200)
        )
        with httpx.Client(headers=headers, timeout=60) as client:
            started = client.post(
                f"{urls[0]}/api/v1/banks/{bank.slug}/import",
                content=lines,
                headers={"Content-Type": "application/x-ndjson"},
            )
            assert started.status_code == 202, started.text
            job_id = started.json()["job"]
            for t in threads:
                t.join(timeout=300)

            def finished():
                body = client.get(f"{urls[1]}/api/v1/jobs/{job_id}").json()
                return body if body["status"] in ("succeeded", "failed") else None

            job = wait_for(finished, timeout=240, interval=0.5)
            assert job is not None and job["status"] == "succeeded", job
            assert job["result"]["created"] == 200
        # A caller that has not written reads through the replica alias (its own sessions).
        with httpx.Client(headers={"Authorization": f"Bearer {reader}"}, timeout=60) as client:
            query = client.post(
                f"{urls[0]}/api/v1/banks/{bank.slug}/query", json={"query": "checkout retries"}
            )
            assert query.status_code == 200, query.text
            assert query.json()["results"], "the replica answered an empty bank"
            entry = client.get(f"{urls[1]}/api/v1/banks/{bank.slug}/entries/{hub.short_id}")
            assert entry.status_code == 200
        assert answers.count(201) == 48 and set(answers) == {200, 201}, sorted(set(answers))
        assert all(p.poll() is None for p in procs), "a process died"
        # Nothing lost or doubled: exactly the acknowledged entries, each linked to the hub.
        notes = Entry.objects.filter(bank=bank, title__startswith="Fleet note")
        assert sorted(notes.values_list("short_id", flat=True)) == sorted(acknowledged)
        hub_detail = httpx.get(
            f"{urls[1]}/api/v1/banks/{bank.slug}/entries/{hub.short_id}",
            headers=headers,
            timeout=60,
        ).json()
        linked = {edge["entry"]["id"] for edge in hub_detail["edges"]}
        assert set(acknowledged) <= linked
        assert Entry.objects.filter(bank=bank, key__startswith="fleet:").count() == 200
        assert Job.objects.get(public_id=job_id).attempts == 1
        assert Operation.objects.filter(bank=bank, kind="import").count() == 1
        # The workers embedded every entry (the web processes only queued the work).
        total = Entry.objects.filter(bank=bank).count()
        assert wait_for(
            lambda: EntryEmbedding.objects.filter(bank=bank).count() == total, timeout=180
        ), f"{EntryEmbedding.objects.filter(bank=bank).count()} of {total} embedded"
        assert replica_sessions() >= 1, "no read went to the replica"
    finally:
        for proc in procs:
            stop(proc)
