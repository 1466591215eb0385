"""Session advisory locks: one holder at a time across processes and machines, held across
the transactions of the block (a job run, a bank's CONCURRENTLY index builds)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.db import connection


@contextlib.contextmanager
def session_lock(namespace: int, key: int) -> Iterator[bool]:
    """Try ``pg_try_advisory_lock(namespace, key)``: True inside the block when this session
    holds it (released at the end), False when another session does (nothing waits)."""
    pair = [namespace, key % 2**31]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", pair)
        held = cursor.fetchone()[0]
    try:
        yield held
    finally:
        if held and connection.connection is not None and not connection.needs_rollback:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", pair)
