"""The answer when the database is away: 503 with ``Retry-After``, never 500.

A request that finds no free pooled connection within ``KB_DB_POOL_TIMEOUT`` seconds, or a
database that cannot be reached at all (stopped, restarting, connection lost), is answered
**503** with ``Retry-After`` — in the API's error envelope under ``/api/``.
"""

from __future__ import annotations

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse

from config.serving.env import env_int

# sqlstates that are a conflict between writers, answered 409 by the API, not an outage.
_CONFLICT_STATES = {"40P01", "40001"}


def retry_after() -> str:
    return str(env_int("KB_UNAVAILABLE_RETRY_AFTER", 5))


def is_database_unavailable(exc: BaseException | None) -> bool:
    """True for errors that mean "the database cannot serve now": unreachable, restarting,
    connection lost, pool exhausted. Writer conflicts (deadlock, serialization) are not."""
    if not isinstance(exc, OperationalError | InterfaceError):
        return False
    cause = exc.__cause__
    return getattr(cause, "sqlstate", None) not in _CONFLICT_STATES


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
