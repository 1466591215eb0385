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


def exception_handler(exc, context):
    if isinstance(exc, KbError):
        return Response(envelope(exc.code, exc.message, exc.fields, **exc.extra), status=exc.status)
    if isinstance(exc, ApiError):
        return Response(
            envelope(exc.code, exc.message, exc.fields, **exc.extra), status=exc.status_code
        )
    if isinstance(exc, RequestDataTooBig):
        # Django's own DATA_UPLOAD_MAX_MEMORY_SIZE guard (multipart fields, request.body).
        return Response(
            envelope("body_too_large", "The request body is larger than the server accepts."),
            status=413,
        )
    if isinstance(exc, SuspiciousOperation):
        # Too many form fields or files, a malformed multipart body, ...
        return Response(
            envelope("bad_request", str(exc) or "The request is malformed."), status=400
        )
    if isinstance(exc, RecursionError):
        return Response(envelope("too_deep", "The input is nested too deeply."), status=400)
    if isinstance(exc, Http404):
        return Response(envelope("not_found", "Nothing is found at this address."), status=404)
    if isinstance(exc, DjangoPermissionDenied):
        return Response(envelope("forbidden", "You may not do this."), status=403)
    if isinstance(exc, exceptions.ParseError):
        return Response(
            envelope("bad_json", f"The body is not valid JSON: {exc.detail}"), status=400
        )
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return Response(envelope("unsupported_media_type", str(exc.detail)), status=415)
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        response = Response(
            envelope("not_authenticated", "Send a valid token as 'Authorization: Bearer <token>'."),
            status=401,
        )
        response["WWW-Authenticate"] = 'Bearer realm="api"'
        return response
    if isinstance(exc, exceptions.PermissionDenied):
        return Response(envelope("forbidden", str(exc.detail)), status=403)
    if isinstance(exc, exceptions.MethodNotAllowed):
        return Response(envelope("method_not_allowed", str(exc.detail)), status=405)
    if isinstance(exc, exceptions.Throttled):
        wait = max(1, math.ceil(exc.wait or 1))
        response = Response(
            envelope(
                "rate_limited",
                f"This token sent too many requests; retry in {wait} seconds.",
                retry_after=wait,
            ),
            status=429,
        )
        response["Retry-After"] = str(wait)
        return response
    if isinstance(exc, exceptions.ValidationError):
        return Response(
            envelope("invalid_input", "Some fields are invalid.", _flatten(exc.detail)), status=400
        )
    if isinstance(exc, DatabaseError) and getattr(
        getattr(exc, "__cause__", None), "sqlstate", None
    ) in (
        "40P01",
        "40001",
    ):
        # A deadlock or serialization failure between concurrent writers: nothing was written,
        # and the same request can simply be sent again.
        response = Response(
            envelope(
                "write_conflict",
                "Another change touched the same entries at the same moment; nothing was written — retry.",
            ),
            status=409,
        )
        response["Retry-After"] = "1"
        return response
    if is_database_unavailable(exc):
        # The database is away (stopped, restarting) or every pooled connection is busy.
        response = Response(envelope("service_unavailable", UNAVAILABLE_MESSAGE), status=503)
        response["Retry-After"] = retry_after()
        return response
    if isinstance(exc, DataError):
        # A string PostgreSQL cannot store is invalid_string wherever it slipped through (the
        # code kb.inputs gives it at the gates); anything else (a number out of the column's
        # range, ...) is invalid_value.
        first_line = str(exc).splitlines()[0] if str(exc) else "rejected by the database"
        if _is_unstorable_string(exc):
            return Response(
                envelope("invalid_string", f"A text cannot be stored: {first_line}"), status=400
            )
        return Response(
            envelope("invalid_value", f"A value cannot be stored: {first_line}"), status=400
        )
    if isinstance(exc, IntegrityError):
        logger.warning("Integrity error reached the API: %s", exc)
        return Response(
            envelope(
                "conflict",
                "The change conflicts with data already in the bank; nothing was written.",
            ),
            status=409,
        )
    if isinstance(exc, exceptions.APIException):
        return Response(
            envelope(getattr(exc, "default_code", "error"), str(exc.detail)), status=exc.status_code
        )
    # Last resort: never leak a traceback; log it and answer in the envelope.
    logger.exception("Unhandled error in %s", context.get("view"))
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
