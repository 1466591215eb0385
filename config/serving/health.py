"""``/healthz`` (the process answers) and ``/readyz`` (database and broker reachable)."""

from __future__ import annotations

from django.conf import settings
from django.db import connections
from django.http import JsonResponse

from config.serving.database import retry_after


def healthz(request):
    """The process is up and serving; touches nothing else."""
    return JsonResponse({"status": "ok"})


def _database() -> str:
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except Exception as exc:
        return f"unavailable: {type(exc).__name__}"


def _broker() -> str:
    if not settings.CELERY_BROKER_URL:
        return "eager"  # no broker configured: tasks run in-process
    from config.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=2)
            conn.default_channel  # noqa: B018  (opens a channel: Redis pings, AMQP handshakes)
        return "ok"
    except Exception as exc:
        return f"unavailable: {type(exc).__name__}"


def readyz(request):
    """200 when the database and the broker answer; 503 with Retry-After otherwise."""
    checks = {"database": _database(), "broker": _broker()}
    ready = all(value in ("ok", "eager") for value in checks.values())
    response = JsonResponse(
        {"status": "ready" if ready else "unavailable", "checks": checks},
        status=200 if ready else 503,
    )
    if not ready:
        response["Retry-After"] = retry_after()
    return response
