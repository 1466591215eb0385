"""Sessions of the test database seen in ``pg_stat_activity``: the one query the concurrency,
deployment and worker-fault tests use to observe other processes, and a second session
holding an advisory lock as another worker would."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from django.db import connection, connections


def other_sessions(condition: str, params: list | None = None) -> int:
    """Sessions of other backends on this database that meet ``condition`` (SQL on
    ``pg_stat_activity``), counted now."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            f"AND pid <> pg_backend_pid() AND ({condition})",
            params or [],
        )
        return cursor.fetchone()[0]


@contextlib.contextmanager
def holding_advisory_lock(namespace: int, key: int) -> Iterator[object]:
    """A second session of the test database holding ``pg_advisory_lock(namespace, key)``, as
    another worker would. Leaving the block closes that session and waits until its backend
    has exited and so released the lock: the server ends a backend after its client is gone,
    not before ``close()`` returns."""
    holder = connections.create_connection("default")
    try:
        with holder.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s, %s), pg_backend_pid()", [namespace, key])
            pid = cursor.fetchone()[1]
        yield holder
    finally:
        holder.close()
    deadline = time.monotonic() + 10
    while other_sessions("pid = %s", [pid]) and time.monotonic() < deadline:
        time.sleep(0.01)
