"""The answer when the database is away: 503 with ``Retry-After``, never 500.

A request that finds no free pooled connection within ``KB_DB_POOL_TIMEOUT`` seconds, or a
database that cannot be reached at all (stopped, restarting, connection lost), is answered
**503** with ``Retry-After`` — in the API's error envelope under ``/api/``.
"""

from __future__ import annotations

import psycopg
from django.db import (
    DatabaseError,
    DataError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    connections,
)
from django.http import HttpResponse, JsonResponse

# sqlstates that are a conflict between writers, answered 409 by the API, not an outage.
_CONFLICT_STATES = {"40P01", "40001"}
# psycopg_pool.PoolTimeout is a psycopg.OperationalError.
_UNAVAILABLE = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)


def retry_after() -> str:
    from django.conf import settings

    return str(settings.KB_UNAVAILABLE_RETRY_AFTER)


def is_database_unavailable(exc: BaseException | None) -> bool:
    """True for errors that mean "the database cannot serve now": unreachable, restarting,
    connection lost, pool exhausted — raised by Django or, unwrapped, by psycopg and its pool,
    or any database error left behind by a connection that died. Writer conflicts (deadlock,
    serialization) and bad values are not."""
    error, depth = exc, 0
    while error is not None and depth < 6:
        if isinstance(error, _UNAVAILABLE):
            cause = (
                error.__cause__ if isinstance(error, OperationalError | InterfaceError) else error
            )
            return getattr(cause, "sqlstate", None) not in _CONFLICT_STATES
        error, depth = error.__cause__ or error.__context__, depth + 1
    if isinstance(exc, DatabaseError) and not isinstance(exc, DataError | IntegrityError):
        # e.g. "You can't execute queries until the end of the 'atomic' block" after the
        # connection broke inside it: unavailable when the connection is gone.
        default = connections["default"]
        return default.connection is None or not default.is_usable()
    return False


UNAVAILABLE_MESSAGE = (
    "The database is unavailable or busy right now; nothing was written. Retry after the "
    "number of seconds in Retry-After."
)


def unavailable_response(request) -> HttpResponse:
    """503 with Retry-After: the API's envelope under /api/, a short page elsewhere."""
    if request.path.startswith("/api/") or request.path.startswith("/mcp"):
        response = JsonResponse(
            {
                "error": {
                    "code": "service_unavailable",
                    "message": UNAVAILABLE_MESSAGE,
                    "fields": {},
                }
            },
            status=503,
        )
    else:
        response = HttpResponse(
            "<!doctype html><title>Unavailable</title><h1>Service unavailable</h1>"
            f"<p>{UNAVAILABLE_MESSAGE}</p>",
            status=503,
            content_type="text/html; charset=utf-8",
        )
    response["Retry-After"] = retry_after()
    return response
