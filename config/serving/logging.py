"""Structured logs: one JSON object per line, carrying request id, actor, bank and operation.

``RequestContextFilter`` stamps every record with the fields of the request (or task) being
served; ``JsonFormatter`` writes the record and any ``extra=`` fields as JSON. Enabled with
``KB_LOG_FORMAT=json`` (the default of ``make run``); ``text`` keeps plain lines.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from config.serving import context

_STANDARD = set(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None).__dict__) | {
    "message",
    "asctime",
    "request_id",
    "actor",
    "bank",
    "operation_id",
}


class RequestContextFilter(logging.Filter):
    """Add ``request_id``, ``actor``, ``bank`` and ``operation_id`` to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        from kb import audit

        info = context.current()
        audit_ctx = audit.current()
        actor = audit_ctx.actor if audit_ctx.actor != "system" else ""
        operation = audit_ctx.operation_id
        if info is not None:
            actor = actor or info.actor
            if operation is None and info.operation_ids:
                operation = info.operation_ids[-1]
        record.request_id = getattr(record, "request_id", None) or (
            info.request_id if info else None
        )
        record.actor = getattr(record, "actor", None) or actor or None
        record.bank = getattr(record, "bank", None) or (info.bank if info else None) or None
        record.operation_id = getattr(record, "operation_id", None) or operation
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record; ``extra=`` fields become keys."""

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
            "actor": getattr(record, "actor", None),
            "bank": getattr(record, "bank", None),
            "operation_id": getattr(record, "operation_id", None),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def logging_config(fmt: str, level: str) -> dict:
    """The LOGGING dict of the settings: JSON or text lines on stderr, context on both."""
    text = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_context": {"()": "config.serving.logging.RequestContextFilter"}},
        "formatters": {
            "json": {"()": "config.serving.logging.JsonFormatter"},
            "text": {"format": text},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "json" if fmt == "json" else "text",
                "filters": ["request_context"],
            }
        },
        "loggers": {
            "kb": {"handlers": ["console"], "level": level, "propagate": False},
            "graph": {"handlers": ["console"], "level": level, "propagate": False},
            "workflows": {"handlers": ["console"], "level": level, "propagate": False},
            "config": {"handlers": ["console"], "level": level, "propagate": False},
            "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
            "django.security": {"handlers": ["console"], "level": "WARNING", "propagate": False},
            "celery": {"handlers": ["console"], "level": "WARNING", "propagate": False},
            "pgserver": {"handlers": ["console"], "level": "WARNING", "propagate": False},
        },
    }
