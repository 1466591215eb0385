"""Usage counters: bumped only for entries actually handed to a caller.

Counters and logs written on a read path (usage, the query log, rate-limit windows) commit
asynchronously when they run in a transaction of their own: :func:`relaxed_commit_cte` turns
``synchronous_commit`` off for that one transaction, so a query does not wait for a WAL flush
(several milliseconds on a busy disk) to count what it read. A crash can lose the last few
hundred milliseconds of such counts, never knowledge: every other write keeps the server's
``synchronous_commit``, and inside an enclosing transaction the statement changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection
from django.db.models import F
from django.utils import timezone

from kb.models import Entry


def relaxed_commit_cte() -> str:
    """``relaxed AS (…)`` for a WITH clause; the statement must read ``relaxed`` (an unread
    plain CTE is never run). Outside a transaction the statement is its own transaction and
    commits without waiting for the WAL flush; inside one it leaves the commit as it is."""
    if connection.in_atomic_block:
        return "relaxed AS (SELECT NULL::text AS setting)"
    return "relaxed AS (SELECT set_config('synchronous_commit', 'off', true) AS setting)"


# The usage bump as a CTE, for a statement that also writes what the query returned (the
# query log): ``%(used_ids)s`` and ``%(used_at)s`` are its parameters.
USAGE_CTE = """used AS (
    UPDATE kb_entry SET usage_count = usage_count + 1, last_used_at = %(used_at)s
     WHERE id = ANY(%(used_ids)s::bigint[]) RETURNING id
)"""


def bump_usage(entry_ids: Iterable[int]) -> int:
    """One UPDATE for all ids; no history rows (usage is not knowledge)."""
    ids = list(entry_ids)
    if not ids:
        return 0
    return Entry.objects.filter(pk__in=ids).update(
        usage_count=F("usage_count") + 1, last_used_at=timezone.now()
    )
