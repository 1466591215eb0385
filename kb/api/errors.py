"""The error envelope of API.md: {"error": {"code", "message", "fields"}}. No 500s by design."""

from __future__ import annotations

import logging
import math

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import DatabaseError, DataError, IntegrityError
from django.http import Http404, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response

from config.serving.database import UNAVAILABLE_MESSAGE, is_database_unavailable, retry_after
from kb.errors import KbError

logger = logging.getLogger("kb.api")


class ApiError(exceptions.APIException):
    """An error raised by the API layer itself, rendered in the envelope."""

    def __init__(
        self,
        status_code: int,
        code: str,
        message: str,
        fields: dict | None = None,
        extra: dict | None = None,
    ):
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.fields = fields or {}
        self.extra = extra or {}


def envelope(code: str, message: str, fields: dict | None = None, **extra) -> dict:
    error = {"code": code, "message": message, "fields": fields or {}}
    error.update(extra)
    return {"error": error}


def _flatten(detail) -> dict:
    if isinstance(detail, dict):
        out = {}
        for key, value in detail.items():
            if isinstance(value, list) and value and not isinstance(value[0], dict):
                out[key] = " ".join(str(v) for v in value)
            else:
                out[key] = value if isinstance(value, dict | list) else str(value)
        return out
    return {}


# SQLSTATEs of text the database cannot hold: invalid byte sequence, untranslatable character,
# NUL in text (psycopg refuses NUL client-side with a DataError naming it).
_UNSTORABLE_SQLSTATES = {"22021", "22P05"}


def _is_unstorable_string(exc: DataError) -> bool:
    cause = getattr(exc, "__cause__", None)
    if getattr(cause, "sqlstate", None) in _UNSTORABLE_SQLSTATES:
        return True
    return "NUL" in str(exc) or "0x00" in str(exc)


def _respond(code: str, message: str, status_code: int, headers: dict | None = None, **extra):
    response = Response(envelope(code, message, **extra), status=status_code)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _own(exc) -> Response:
    """A KbError (services) or an ApiError (the API layer): their code, message and fields."""
    status_code = exc.status if isinstance(exc, KbError) else exc.status_code
    return Response(envelope(exc.code, exc.message, exc.fields, **exc.extra), status=status_code)


def _throttled(exc) -> Response:
    wait = max(1, math.ceil(exc.wait or 1))
    message = f"This token sent too many requests; retry in {wait} seconds."
    return _respond("rate_limited", message, 429, {"Retry-After": str(wait)}, retry_after=wait)


def _is_write_conflict(exc) -> bool:
    """A deadlock or serialization failure between concurrent writers: nothing was written,
    and the same request can simply be sent again."""
    sqlstate = getattr(getattr(exc, "__cause__", None), "sqlstate", None)
    return isinstance(exc, DatabaseError) and sqlstate in ("40P01", "40001")


def _data_error(exc) -> Response:
    """A string PostgreSQL cannot store is invalid_string wherever it slipped through (the code
    kb.inputs gives it at the gates); anything else (a number out of the column's range, ...)
    is invalid_value."""
    first_line = str(exc).splitlines()[0] if str(exc) else "rejected by the database"
    if _is_unstorable_string(exc):
        return _respond("invalid_string", f"A text cannot be stored: {first_line}", 400)
    return _respond("invalid_value", f"A value cannot be stored: {first_line}", 400)


def _integrity_error(exc) -> Response:
    logger.warning("Integrity error reached the API: %s", exc)
    message = "The change conflicts with data already in the bank; nothing was written."
    return _respond("conflict", message, 409)


def _kind(*classes):
    return lambda exc: isinstance(exc, classes)


WRITE_CONFLICT = (
    "Another change touched the same entries at the same moment; nothing was written — retry."
)

# Exception -> envelope, first match wins (order matters: a deadlock is a DatabaseError, a
# DataError is one too; every DRF error is an APIException).
RENDERERS = (
    (_kind(KbError, ApiError), _own),
    # Django's own DATA_UPLOAD_MAX_MEMORY_SIZE guard (multipart fields, request.body).
    (
        _kind(RequestDataTooBig),
        lambda e: _respond(
            "body_too_large", "The request body is larger than the server accepts.", 413
        ),
    ),
    # Too many form fields or files, a malformed multipart body, ...
    (
        _kind(SuspiciousOperation),
        lambda e: _respond("bad_request", str(e) or "The request is malformed.", 400),
    ),
    (_kind(RecursionError), lambda e: _respond("too_deep", "The input is nested too deeply.", 400)),
    (_kind(Http404), lambda e: _respond("not_found", "Nothing is found at this address.", 404)),
    (_kind(DjangoPermissionDenied), lambda e: _respond("forbidden", "You may not do this.", 403)),
    (
        _kind(exceptions.ParseError),
        lambda e: _respond("bad_json", f"The body is not valid JSON: {e.detail}", 400),
    ),
    (
        _kind(exceptions.UnsupportedMediaType),
        lambda e: _respond("unsupported_media_type", str(e.detail), 415),
    ),
    (
        _kind(exceptions.NotAuthenticated, exceptions.AuthenticationFailed),
        lambda e: _respond(
            "not_authenticated",
            "Send a valid token as 'Authorization: Bearer <token>'.",
            401,
            {"WWW-Authenticate": 'Bearer realm="api"'},
        ),
    ),
    (_kind(exceptions.PermissionDenied), lambda e: _respond("forbidden", str(e.detail), 403)),
    (
        _kind(exceptions.MethodNotAllowed),
        lambda e: _respond("method_not_allowed", str(e.detail), 405),
    ),
    (_kind(exceptions.Throttled), _throttled),
    (
        _kind(exceptions.ValidationError),
        lambda e: Response(
            envelope("invalid_input", "Some fields are invalid.", _flatten(e.detail)), status=400
        ),
    ),
    (
        _is_write_conflict,
        lambda e: _respond("write_conflict", WRITE_CONFLICT, 409, {"Retry-After": "1"}),
    ),
    # The database is away (stopped, restarting) or every pooled connection is busy.
    (
        is_database_unavailable,
        lambda e: _respond(
            "service_unavailable", UNAVAILABLE_MESSAGE, 503, {"Retry-After": retry_after()}
        ),
    ),
    (_kind(DataError), _data_error),
    (_kind(IntegrityError), _integrity_error),
    (
        _kind(exceptions.APIException),
        lambda e: _respond(getattr(e, "default_code", "error"), str(e.detail), e.status_code),
    ),
)


def exception_handler(exc, context):
    """The envelope for ``exc`` (:data:`RENDERERS`); anything unforeseen is logged and answers
    500 ``internal_error`` without a traceback. ``context`` is DRF's (None from MCP)."""
    for matches, render in RENDERERS:
        if matches(exc):
            return render(exc)
    logger.exception("Unhandled error in %s", (context or {}).get("view"))
    return Response(
        envelope("internal_error", "Something went wrong on our side; nothing was written."),
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )


def json_not_found(request, exception=None):
    """404 for unknown addresses: JSON under /api/, Django's page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse(envelope("not_found", "Nothing is found at this address."), status=404)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)
