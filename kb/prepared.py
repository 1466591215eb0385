"""Hot statements as server-side prepared statements.

Django binds parameters on the client, so every execution of a statement is new text to
PostgreSQL: it is parsed and planned again. For the few large statements a query runs every
time (the fold's neighbour read plans for about as long as it runs), :func:`fetch_prepared`
binds on the server and has psycopg prepare the text once per connection; PostgreSQL then
reuses the parse and, once a generic plan is no worse than the custom ones, the plan too.

The cursor is Django's own wrapper around a server-binding psycopg cursor, so query logging,
``CaptureQueriesContext`` and the execute wrappers see the statement like any other.

It is on when the connection allows preparing (``config/serving/dbconfig.py`` sets psycopg's
``prepare_threshold`` unless ``KB_PREPARED_STATEMENTS=0``, for a pooler that cannot keep
prepared statements); otherwise the statement runs as Django runs any other. A statement given
to :func:`fetch_prepared` must be fixed text for a given shape: values go in parameters, never
formatted into the text, or each call prepares a new statement (psycopg keeps the last 100).
"""

from __future__ import annotations

from collections.abc import Mapping

import psycopg
from django.db import connection
from django.db.backends.utils import CursorDebugWrapper


class _PreparingCursor(psycopg.Cursor):
    """A server-binding cursor whose statements are prepared on first use."""

    def execute(self, query, params=None, *, prepare=None, binary=None):
        return super().execute(query, params, prepare=True, binary=binary)


class _PreparedDebugWrapper(CursorDebugWrapper):
    """Logs the statement as written (a prepared execution has no client-side text to log)."""

    def execute(self, sql, params=None):
        with self.debug_sql(sql, params, use_last_executed_query=False):
            return self._execute_with_wrappers(sql, params, many=False, executor=self._execute)


def fetch_prepared(sql: str, params: Mapping[str, object]) -> list[tuple]:
    """Every row of ``sql`` run with ``params``, prepared on the server when allowed."""
    connection.ensure_connection()
    raw = connection.connection
    if getattr(raw, "prepare_threshold", None) is None:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()
    cursor = _PreparingCursor(raw)
    wrapped = (
        _PreparedDebugWrapper(cursor, connection)
        if connection.queries_logged
        else connection.make_cursor(cursor)
    )
    with wrapped:
        wrapped.execute(sql, params)
        return wrapped.fetchall()
