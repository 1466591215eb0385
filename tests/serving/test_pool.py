"""No number of clients exhausts PostgreSQL: a served process holds at most its pool, and a
request that cannot get a connection in time is answered 503 with Retry-After, not 500."""

from __future__ import annotations

import threading

import httpx
import pytest
from django.db import connection, transaction

from kb.services.tokens import create_token

from .procs import base_env, free_port, start_web, stop, wait_for

pytestmark = [
    pytest.mark.xdist_group("serving_procs"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def sessions_named(name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [name])
        return cursor.fetchone()[0]


def test_exhausted_pool_answers_503_and_bounds_connections(bank, make_entry, tmp_path):
    entry = make_entry("Locked entry")
    _, token = create_token("pool-agent", [bank], "read,write")
    name = f"kb-pool-{free_port()}"
    env = base_env(
        KB_DB_POOL_MIN="1",
        KB_DB_POOL_MAX="2",
        KB_DB_POOL_TIMEOUT="1",
        KB_UNAVAILABLE_RETRY_AFTER="2",
        KB_DB_APPLICATION_NAME=name,
    )
    port = free_port()
    web = start_web(env, port, workers=1, log=tmp_path / "web.log")
    url = f"http://127.0.0.1:{port}/api/v1/banks/{bank.slug}"
    headers = {"Authorization": f"Bearer {token}"}
    answers: list[int] = []
    lock = threading.Lock()

    def edit(i: int) -> None:
        r = httpx.patch(
            f"{url}/entries/{entry.short_id}",
            headers=headers,
            timeout=60,
            json={"content": f"Edited by client {i}."},
        )
        with lock:
            answers.append(r.status_code)

    try:
        with transaction.atomic():
            # Hold the entry's row lock: every edit blocks on it with its pooled connection.
            type(entry).objects.select_for_update().get(pk=entry.pk)
            editors = [threading.Thread(target=edit, args=(i,)) for i in range(12)]
            for t in editors:
                t.start()
            assert wait_for(lambda: len(answers) >= 10, timeout=60), answers
            held = sessions_named(name)
            # Meanwhile: the two pooled connections are busy, the rest waited 1 s and got 503.
            busy = httpx.get(f"{url}/entries/{entry.short_id}", headers=headers, timeout=60)
        for t in editors:
            t.join(timeout=60)
        assert held <= 2, f"{held} sessions from a process whose pool holds 2"
        assert busy.status_code == 503 and busy.headers["Retry-After"] == "2"
        assert busy.json()["error"]["code"] == "service_unavailable"
        assert answers.count(503) >= 10, answers
        assert set(answers) <= {200, 503}, answers  # never a 500
        # The two that held connections finished once the lock went; the process still serves.
        assert answers.count(200) >= 1
        after = httpx.get(f"{url}/entries/{entry.short_id}", headers=headers, timeout=60)
        assert after.status_code == 200
        assert sessions_named(name) <= 2
    finally:
        stop(web)
