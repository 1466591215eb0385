"""Per-token rate limits: fixed one-minute windows counted in PostgreSQL.

One ``INSERT … ON CONFLICT DO UPDATE … RETURNING`` per counted request, so the count is exact
across any number of web processes and machines that share the database (no cache to
configure); it commits asynchronously (kb.services.usage.relaxed_commit_cte: a request does
not wait for a WAL flush to be counted; a crash may forget the last instants' counts). Two buckets: ``all`` (every request of the token, ``KB_RATE_LIMIT_PER_MINUTE``) and
``write`` (requests that need the write or curate scope, ``KB_RATE_LIMIT_WRITES_PER_MINUTE``).
A limit of 0 turns that bucket off.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from kb.models import TokenRateWindow
from kb.services.usage import relaxed_commit_cte

WINDOW_SECONDS = 60
LIMIT_SETTINGS = {
    "all": "KB_RATE_LIMIT_PER_MINUTE",
    "write": "KB_RATE_LIMIT_WRITES_PER_MINUTE",
}


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    count: int
    limit: int
    retry_after: int  # seconds until the window ends (0 when allowed)


def limit_for(bucket: str) -> int:
    return getattr(settings, LIMIT_SETTINGS[bucket])


def count_request(token_id: int, bucket: str, now: float | None = None) -> RateDecision:
    """Count one request of ``token_id`` in ``bucket``; say whether it is within the limit."""
    limit = limit_for(bucket)
    if limit <= 0:
        return RateDecision(True, 0, 0, 0)
    now = time.time() if now is None else now
    window_start = int(now) // WINDOW_SECONDS * WINDOW_SECONDS
    table = TokenRateWindow._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH {relaxed_commit_cte()}
            INSERT INTO {table} (token_id, bucket, window_start, count)
            SELECT %s, %s, %s, 1 FROM relaxed
            ON CONFLICT (token_id, bucket, window_start)
            DO UPDATE SET count = {table}.count + 1
            RETURNING count
            """,
            [token_id, bucket, window_start],
        )
        count = cursor.fetchone()[0]
        if count == 1:
            # First request of a new window: forget this token's older windows.
            cursor.execute(
                f"DELETE FROM {table} WHERE token_id = %s AND bucket = %s AND window_start < %s",
                [token_id, bucket, window_start],
            )
    if count <= limit:
        return RateDecision(True, count, limit, 0)
    retry_after = max(1, int(window_start + WINDOW_SECONDS - now + 0.999))
    return RateDecision(False, count, limit, retry_after)
