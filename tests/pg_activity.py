"""Sessions of the test database seen in ``pg_stat_activity``: the one query the concurrency,
deployment and worker-fault tests use to observe other processes."""

from __future__ import annotations

from django.db import connection


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
