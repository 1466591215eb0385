"""Session advisory locks: one holder at a time across processes and machines, held across
the transactions of the block (a job run, a bank's CONCURRENTLY index builds)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from django.db import DatabaseError, connection

logger = logging.getLogger(__name__)


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
        if held and connection.connection is not None:
            _unlock(pair)


def _unlock(pair: list[int]) -> None:
    """Release the lock. A session whose transaction failed cannot run the unlock: the lock
    then stays with the session until it ends (as a dead worker's does), and the block's own
    error is not hidden behind the unlock's."""
    if connection.needs_rollback:
        return
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", pair)
    except DatabaseError:
        logger.warning("advisory lock %s: not released (the session's transaction failed)", pair)
