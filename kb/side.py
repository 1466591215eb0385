"""A second database connection per thread, for a statement that should run beside the
request's own (issue 24: the search's lexical arm beside its vector search).

On one connection PostgreSQL runs statements in the order sent, so the search statement waited
behind the lexical arm. :func:`side_connection` lends a second connection to the same database
for a block, so the two run on two backends at once:

* With a psycopg pool (``KB_DB_POOL``, on under gunicorn) it is borrowed from that pool without
  waiting for one — when none is free the caller gets None and runs today's path on the
  request's connection — and given back when the block ends.
* Without a pool, each thread opens one lazily (the request connection's parameters and
  session options) and keeps it; it is closed when the thread ends, when the request
  connection has been closed at the end of a request, or by :func:`close_side_connection`.

Never lent while the request's connection is inside a transaction (an ``atomic`` block, or
autocommit off): the side connection would not see its uncommitted rows. Off with
``KB_SIDE_CONNECTION=0``. The side connection is in autocommit: it only reads.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator

import psycopg
from django.conf import settings
from django.core.signals import request_finished
from django.db import connection
from psycopg_pool import PoolTimeout

# How long a borrow may wait when the pool reported a free connection and another thread took
# it first: never the pool's own KB_DB_POOL_TIMEOUT.
BORROW_TIMEOUT = 0.001

_local = threading.local()


class _Held:
    """This thread's own side connection (no pool); closed when the thread's locals go."""

    def __init__(self, raw: psycopg.Connection):
        self.raw = raw
        self._finalizer = weakref.finalize(self, _close_quietly, raw)

    def close(self) -> None:
        self._finalizer()


def _close_quietly(raw: psycopg.Connection) -> None:
    with contextlib.suppress(Exception):
        raw.close()


def usable() -> bool:
    """True when a side connection may stand in for the request's: on, and the request's
    connection outside any transaction (its rows are all committed)."""
    if not settings.KB_SIDE_CONNECTION:
        return False
    connection.ensure_connection()
    return not connection.in_atomic_block and connection.get_autocommit()


def _pool():
    return connection.pool


def _borrow(pool) -> psycopg.Connection | None:
    """A free connection of ``pool``, or None at once when it has none."""
    if pool.get_stats().get("pool_available", 0) < 1:
        return None
    try:
        return pool.getconn(timeout=BORROW_TIMEOUT)
    except PoolTimeout:
        return None


def _own() -> psycopg.Connection:
    held = getattr(_local, "held", None)
    if held is not None and (held.raw.closed or held.raw.broken):
        held.close()
        held = None
    if held is None:
        raw = connection.get_new_connection(connection.get_connection_params())
        raw.autocommit = True
        connection._configure_connection(raw)
        held = _local.held = _Held(raw)
    return held.raw


@contextlib.contextmanager
def side_connection() -> Iterator[psycopg.Connection | None]:
    """A second connection for the block, or None (the caller uses the request's): see the
    module's docstring for when."""
    if not usable():
        yield None
        return
    pool = _pool()
    if pool is None:
        raw = _own()
        try:
            yield raw
        except psycopg.Error:
            if raw.broken or raw.closed:
                close_side_connection()
            raise
        return
    raw = _borrow(pool)
    if raw is None:
        yield None
        return
    try:
        yield raw
    finally:
        pool.putconn(raw)


def close_side_connection() -> None:
    """Close this thread's own side connection, if it has one (tests, end of a request)."""
    held = getattr(_local, "held", None)
    _local.held = None
    if held is not None:
        held.close()


def _after_request(**kwargs) -> None:
    # Django's close_old_connections ran first (connected earlier): follow the request's
    # connection when it was closed (CONN_MAX_AGE reached, an error, or no persistence).
    if connection.connection is None:
        close_side_connection()


request_finished.connect(_after_request, dispatch_uid="kb.side.after_request")
