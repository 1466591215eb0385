"""Prometheus metrics: request latency by route, Celery task durations, queue depth.

Under gunicorn every worker process writes its samples to ``PROMETHEUS_MULTIPROC_DIR`` (set by
``config/gunicorn.conf.py``) and ``/metrics`` adds them up across processes; a Celery worker
given the same directory on the same machine shows up there too. ``/metrics`` answers staff
sessions and ``Authorization: Bearer <KB_METRICS_TOKEN>``.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import time

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily

from config.environment import Environment
from config.serving import context

logger = logging.getLogger("config.serving.metrics")

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

REQUESTS = Counter(
    "kb_http_requests_total",
    "HTTP requests answered, by route pattern and status.",
    ["method", "route", "status"],
)
LATENCY = Histogram(
    "kb_http_request_duration_seconds",
    "Time to answer a request, by route pattern.",
    ["method", "route"],
    buckets=LATENCY_BUCKETS,
)
TASKS = Histogram(
    "kb_task_duration_seconds",
    "Time a Celery task ran, by task name and final state.",
    ["task", "state"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800),
)


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    REQUESTS.labels(method, route, str(status)).inc()
    LATENCY.labels(method, route).observe(seconds)


# --- Celery -----------------------------------------------------------------------------------

_task_started: dict[str, tuple[float, object]] = {}


def _task_prerun(task_id=None, task=None, **kwargs) -> None:
    # Log lines written during the task carry its id as their request id.
    token = context.begin(context.RequestInfo(task_id or "", route=getattr(task, "name", "")))
    _task_started[task_id] = (time.perf_counter(), token)


def _task_postrun(task_id=None, task=None, state=None, **kwargs) -> None:
    started, token = _task_started.pop(task_id, (None, None))
    if token is not None:
        with contextlib.suppress(ValueError):  # set in another context: nothing to undo here
            context.end(token)
    if started is not None and task is not None:
        TASKS.labels(task.name, state or "UNKNOWN").observe(time.perf_counter() - started)


def connect_task_signals() -> None:
    """Time every task a worker runs (called by the Celery app module)."""
    from celery import signals

    signals.task_prerun.connect(_task_prerun, weak=False)
    signals.task_postrun.connect(_task_postrun, weak=False)


def _depth(conn, queue: str) -> int:
    """Messages waiting in ``queue``; a queue never declared holds none."""
    from kombu.exceptions import ChannelError

    channel = conn.channel()
    try:
        return channel.queue_declare(queue=queue, passive=True).message_count
    except (ChannelError, *conn.channel_errors):
        return 0
    finally:
        with contextlib.suppress(Exception):
            channel.close()


class QueueDepthCollector:
    """Messages waiting in each Celery queue, read from the broker at scrape time."""

    def collect(self):
        family = GaugeMetricFamily(
            "kb_queue_depth", "Messages waiting in a Celery queue.", labels=["queue"]
        )
        up = GaugeMetricFamily("kb_broker_up", "1 when the broker answered the scrape.")
        if not settings.CELERY_BROKER_URL:
            return  # tasks run eagerly in-process: there is no queue
        from config.celery import app

        try:
            with app.connection_for_read() as conn:
                conn.ensure_connection(max_retries=1, interval_start=0, timeout=2)
                for queue in settings.KB_METRICS_QUEUES:
                    family.add_metric([queue], _depth(conn, queue))
            up.add_metric([], 1)
        except Exception as exc:  # the broker is away: say so, do not fail the scrape
            logger.warning("queue depth unavailable: %s", exc)
            up.add_metric([], 0)
        yield family
        yield up


def _registry() -> CollectorRegistry:
    # Set under gunicorn (config/gunicorn.conf.py): the worker processes share their samples.
    if Environment()["PROMETHEUS_MULTIPROC_DIR"]:
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return REGISTRY


def _authorized(request) -> bool:
    user = request.__dict__.get("user") or getattr(request, "user", None)
    if user is not None and getattr(user, "is_staff", False) and user.is_active:
        return True
    token = settings.KB_METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    return bool(token) and hmac.compare_digest(header.encode(), f"Bearer {token}".encode())


def metrics_view(request):
    """The Prometheus exposition: staff session or ``Bearer <KB_METRICS_TOKEN>``."""
    if not _authorized(request):
        response = JsonResponse(
            {
                "error": {
                    "code": "not_authenticated",
                    "message": "Metrics need a staff login or 'Authorization: Bearer "
                    "<KB_METRICS_TOKEN>'.",
                    "fields": {},
                }
            },
            status=401,
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    queues = CollectorRegistry()
    queues.register(QueueDepthCollector())
    body = generate_latest(_registry()) + generate_latest(queues)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
