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


class Fleet:
    """Eight agents writing through two web processes, round robin, as behind a balancer."""

    def __init__(self, urls: list[str], token: str, bank, hub):
        self.urls, self.bank, self.hub = urls, bank, hub
        self.headers = {"Authorization": f"Bearer {token}"}
        self.acknowledged: list[str] = []
        self.answers: list[int] = []
        self.lock = threading.Lock()

    def body(self, n: int, i: int) -> dict:
        return {
            "title": f"Fleet note {n}-{i}",
            "content": f"Checkout retries are safe after a 409 ({n}-{i}).",
            "useful_for": "Use when a checkout write conflicts.",
            "lifetime": {"durable": True},
            "connections": [
                {
                    "id": self.hub.short_id,
                    "relation": "see_also",
                    "note": "The service this note is about.",
                }
            ],
        }

    def agent(self, n: int) -> None:
        rng = random.Random(n)
        entries = f"/api/v1/banks/{self.bank.slug}/entries"
        with httpx.Client(headers=self.headers, timeout=60) as client:
            for i in range(6):
                url = self.urls[(n + i) % 2]  # round robin, as a load balancer would
                for _attempt in range(5):
                    r = client.post(f"{url}{entries}", json=self.body(n, i))
                    if r.status_code != 409:
                        break
                    time.sleep(float(r.headers.get("Retry-After", "1")) * rng.random())
                with self.lock:
                    self.answers.append(r.status_code)
                    if r.status_code == 201:
                        self.acknowledged.append(r.json()["id"])
                # Read it back through the other process at once.
                other = self.urls[(n + i + 1) % 2]
                back = client.get(f"{other}{entries}/{r.json().get('id', 'none')}")
                with self.lock:
                    self.answers.append(back.status_code)

    def import_while_writing(self) -> None:
        """200 lines imported through process A while the agents write; the job, followed
        through process B, succeeds."""
        threads = [threading.Thread(target=self.agent, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        lines = "\n".join(
            f'{{"type": "entry", "key": "fleet:{i}", "title": "Fleet import {i}", '
            f'"content": "Imported through process A, line {i}.", "kind": "fact"}}'
            for i in range(200)
        )
        with httpx.Client(headers=self.headers, timeout=60) as client:
            started = client.post(
                f"{self.urls[0]}/api/v1/banks/{self.bank.slug}/import",
                content=lines,
                headers={"Content-Type": "application/x-ndjson"},
            )
            assert started.status_code == 202, started.text
            job_id = started.json()["job"]
            for t in threads:
                t.join(timeout=300)

            def finished():
                body = client.get(f"{self.urls[1]}/api/v1/jobs/{job_id}").json()
                return body if body["status"] in ("succeeded", "failed") else None

            job = wait_for(finished, timeout=240, interval=0.5)
            assert job is not None and job["status"] == "succeeded", job
            assert job["result"]["created"] == 200
        assert Job.objects.get(public_id=job_id).attempts == 1

    def check_nothing_lost(self) -> None:
        """Exactly the acknowledged entries, each linked to the hub; every entry embedded by
        the workers (the web processes only queued the work)."""
        bank = self.bank
        answers = self.answers
        assert answers.count(201) == 48 and set(answers) == {200, 201}, sorted(set(answers))
        notes = Entry.objects.filter(bank=bank, title__startswith="Fleet note")
        assert sorted(notes.values_list("short_id", flat=True)) == sorted(self.acknowledged)
        hub_detail = httpx.get(
            f"{self.urls[1]}/api/v1/banks/{bank.slug}/entries/{self.hub.short_id}",
            headers=self.headers,
            timeout=60,
        ).json()
        linked = {edge["entry"]["id"] for edge in hub_detail["edges"]}
        assert set(self.acknowledged) <= linked
        assert Entry.objects.filter(bank=bank, key__startswith="fleet:").count() == 200
        assert Operation.objects.filter(bank=bank, kind="import").count() == 1
        total = Entry.objects.filter(bank=bank).count()
        assert wait_for(
            lambda: EntryEmbedding.objects.filter(bank=bank).count() == total, timeout=180
        ), f"{EntryEmbedding.objects.filter(bank=bank).count()} of {total} embedded"


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
        fleet = Fleet([f"http://127.0.0.1:{port}" for port in ports], token, bank, hub)
        fleet.import_while_writing()
        # A caller that has not written reads through the replica alias (its own sessions).
        with httpx.Client(headers={"Authorization": f"Bearer {reader}"}, timeout=60) as client:
            query = client.post(
                f"{fleet.urls[0]}/api/v1/banks/{bank.slug}/query",
                json={"query": "checkout retries"},
            )
            assert query.status_code == 200, query.text
            assert query.json()["results"], "the replica answered an empty bank"
            entry = client.get(f"{fleet.urls[1]}/api/v1/banks/{bank.slug}/entries/{hub.short_id}")
            assert entry.status_code == 200
        assert all(p.poll() is None for p in procs), "a process died"
        fleet.check_nothing_lost()
        assert replica_sessions() >= 1, "no read went to the replica"
    finally:
        for proc in procs:
            stop(proc)
