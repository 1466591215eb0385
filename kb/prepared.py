"""Hot statements as server-side prepared statements.

Django binds parameters on the client, so every execution of a statement is new text to
PostgreSQL: it is parsed and planned again, and a query vector travels as 8 KB of SQL text. For
the few large statements a query runs every time (the fold's neighbour read planned for about as
long as it ran), :func:`fetch_prepared` binds on the server and has psycopg prepare the text
once per connection; PostgreSQL then reuses the parse and, once a generic plan is no worse than
the custom ones, the plan too.

Only these statements are prepared. Django leaves psycopg's preparing off on its connections
(``prepare_threshold`` None, for the sake of poolers), and so does this module outside the one
execute: it lifts the threshold for that call and puts it back, so psycopg keeps no cache of the
ORM's statements and never deallocates on their behalf. A name prepared once stays usable on
that connection (psycopg forgets them on a rollback and prepares again).

The cursor is Django's own wrapper around a server-binding psycopg cursor, so query logging,
``CaptureQueriesContext`` and the execute wrappers see the statement like any other. Like
Django's ``connection.cursor()`` it loads ``timestamptz`` results in the connection's time
zone (the token read returns model timestamps); it skips the thread-sharing check. A
statement given here must be fixed text for a given shape — values go in parameters, never
formatted into the text, or each call prepares a new statement (psycopg keeps the last 100
per connection).

``KB_PREPARED_STATEMENTS = False`` (env ``KB_PREPARED_STATEMENTS=0``) runs them as Django runs
any other statement: for a pooler that cannot keep prepared statements.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from functools import lru_cache

import psycopg
from django.conf import settings
from django.db import connection
from django.db.backends.postgresql.psycopg_any import register_tzloader
from django.db.backends.utils import CursorDebugWrapper
from psycopg import _queries
from psycopg.postgres import types as pg_types
from psycopg.pq import Format

TIMESTAMPTZ_OID = pg_types["timestamptz"].oid

PREPARE_WHEN_ASKED = 2**31 - 1  # a threshold no statement reaches: only prepare=True prepares


@lru_cache(maxsize=64)
def _converted(query: str, encoding: str):
    return _queries._query2pg_nocache(query.encode(encoding), encoding)


class _CachedQuery(_queries.PostgresQuery):
    """The statement's ``%(name)s`` placeholders turned into ``$n`` once per text. psycopg
    caches that only for texts up to 4 KB (``MAX_CACHED_STATEMENT_LENGTH``); the fold's
    neighbour statement is twice that, so every execution split it again (0.1 ms of client
    CPU a query). The statements given here are a few fixed texts, so all are cached."""

    def convert(self, query, vars) -> None:
        if vars is None or not isinstance(query, str):
            super().convert(query, vars)
            return
        parts = _converted(query, self._tx.encoding)
        self.query, self._want_formats, self._order, self._parts = parts
        self.dump(vars)


class _PreparingCursor(psycopg.Cursor):
    """A server-binding cursor whose statements are prepared on first use."""

    _query_cls = _CachedQuery

    def execute(self, query, params=None, *, prepare=None, binary=None):
        return super().execute(query, params, prepare=True, binary=binary)


class _PreparedDebugWrapper(CursorDebugWrapper):
    """Logs the statement as written (a prepared execution has no client-side text to log)."""

    def execute(self, sql, params=None):
        with self.debug_sql(sql, params, use_last_executed_query=False):
            return self._execute_with_wrappers(sql, params, many=False, executor=self._execute)


def fetch_prepared(sql: str, params: Mapping[str, object]) -> list[tuple]:
    """Every row of ``sql`` run with ``params``, prepared on the server when enabled."""
    return send_prepared(sql, params).rows()


class Sent:
    """A statement executed (inside :func:`pipelined`: sent, not awaited); ``rows`` reads it."""

    def __init__(self, cursor):
        self.cursor = cursor

    def rows(self) -> list[tuple]:
        with self.cursor as cursor:
            return cursor.fetchall()


def send(sql: str, params) -> Sent:
    """``sql`` executed on Django's cursor as any statement is (not prepared), its rows left
    to read: inside :func:`pipelined` the caller works while PostgreSQL runs it."""
    return _executed(connection.cursor(), sql, params)


def send_prepared(sql: str, params: Mapping[str, object]) -> Sent:
    """``sql`` executed with ``params`` as :func:`fetch_prepared` runs it, its rows left to
    read: inside :func:`pipelined` the caller works while PostgreSQL runs it."""
    if not settings.KB_PREPARED_STATEMENTS:
        return send(sql, params)
    connection.ensure_connection()
    raw = connection.connection
    prepared = _PreparingCursor(raw)
    # Timestamps load in the connection's time zone, as on Django's own cursors.
    if connection.timezone != raw.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT).timezone:
        register_tzloader(connection.timezone, prepared)
    cursor = (
        _PreparedDebugWrapper(prepared, connection)
        if connection.queries_logged
        else connection.make_cursor(prepared)
    )
    saved = raw.prepare_threshold
    raw.prepare_threshold = PREPARE_WHEN_ASKED
    try:
        return _executed(cursor, sql, params)
    finally:
        raw.prepare_threshold = saved


def _executed(cursor, sql: str, params) -> Sent:
    try:
        cursor.execute(sql, params)
    except BaseException:
        cursor.close()
        raise
    return Sent(cursor)


@contextlib.contextmanager
def pipelined() -> Iterator[None]:
    """The connection in pipeline mode for the block: a statement executed in it is sent at
    once and its rows are awaited only when fetched, so the Python work in between runs
    beside PostgreSQL's (on another core) instead of after it. Leaving the block waits for
    whatever is still in flight. A driver without pipelines runs the block as it is."""
    connection.ensure_connection()
    pipeline = getattr(connection.connection, "pipeline", None)
    if pipeline is None:
        yield
        return
    with pipeline():
        yield
