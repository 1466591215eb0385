"""Errors with a stable code and one clear sentence, raised by services, rendered by the API."""

from __future__ import annotations


class KbError(Exception):
    """Base of every error a service raises on purpose."""

    status = 400
    code = "bad_request"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        fields: dict | None = None,
        extra: dict | None = None,
    ):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.fields = fields or {}
        self.extra = extra or {}


class InvalidInput(KbError):
    status = 400
    code = "invalid_input"


class Forbidden(KbError):
    status = 403
    code = "forbidden"


class NotFound(KbError):
    status = 404
    code = "not_found"


class Conflict(KbError):
    status = 409
    code = "conflict"


class Refused(KbError):
    status = 422
    code = "refused"
