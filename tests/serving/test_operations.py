"""Operations endpoints, request ids and JSON logs, metrics, security headers, login throttling,
and the 503 answer when the database is away — in-process, through Django's test client."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import OperationalError
from django.test import Client

from config.serving.logging import JsonFormatter, RequestContextFilter
from config.serving.secret import read_secret_key

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db


def test_healthz_and_readyz_answer(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "checks": {"database": "ok", "broker": "eager"}}


def test_readyz_is_503_with_retry_after_when_the_database_fails(client, monkeypatch):
    from config.serving import health

    monkeypatch.setattr(health, "_database", lambda: "unavailable: OperationalError")
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json()["checks"]["database"].startswith("unavailable")


def test_readyz_reports_an_unreachable_broker(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    from config.celery import app

    previous = app.conf.broker_url
    app.conf.broker_url = settings.CELERY_BROKER_URL
    try:
        response = client.get("/readyz")
    finally:
        app.conf.broker_url = previous
    assert response.status_code == 503
    assert response.json()["checks"]["broker"].startswith("unavailable")


def test_request_id_is_echoed_or_made(client):
    assert client.get("/healthz", HTTP_X_REQUEST_ID="agent-7.step-3")["X-Request-ID"] == (
        "agent-7.step-3"
    )
    made = client.get("/healthz", HTTP_X_REQUEST_ID="bad id with spaces")["X-Request-ID"]
    assert made != "bad id with spaces" and len(made) == 32


@pytest.fixture
def json_log():
    """The request logger's lines, formatted as in production."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestContextFilter())
    logger = logging.getLogger("config.serving.request")
    logger.addHandler(handler)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        logger.removeHandler(handler)


def test_log_line_carries_request_id_actor_bank_and_operation(client_rw, make_entry, json_log):
    a, b = make_entry("Alpha"), make_entry("Beta")
    response = client_rw.post(
        "/api/v1/banks/acme/edges",
        {"from": a.short_id, "to": b.short_id, "relation": "see_also", "note": "Same area."},
        format="json",
        HTTP_X_REQUEST_ID="req-123",
    )
    assert response.status_code == 201, response.content
    (line,) = [entry for entry in json_log() if entry["path"] == "/api/v1/banks/acme/edges"]
    from kb.models import Operation

    op = Operation.objects.get(bank__slug="acme", kind="link")
    assert line["request_id"] == "req-123" == op.request_id  # the operation names it too
    assert line["actor"] == "agent:test-agent" == op.actor
    assert line["bank"] == "acme"
    assert line["operation_id"] == op.pk and line["operations"] == [op.pk]
    assert line["route"] == "api/v1/banks/<slug:bank>/edges"
    assert line["status"] == 201 and line["duration_ms"] > 0


def test_metrics_need_staff_or_the_metrics_token(client, settings, client_rw):
    settings.KB_METRICS_TOKEN = "s3cret-metrics"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    client_rw.get("/api/v1/banks/acme/entries/deadbeef")  # one labelled request to report
    body = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-metrics").content.decode()
    assert "kb_http_request_duration_seconds_bucket" in body
    # Labelled by route pattern, never by raw path (bounded label values).
    assert 'route="api/v1/banks/<slug:bank>/entries/<str:entry_id>"' in body
    assert "deadbeef" not in body
    staff = User.objects.create_user("ops", password="pw-ops-123456", is_staff=True)
    session = Client()
    session.force_login(staff)
    assert session.get("/metrics").status_code == 200


def test_html_pages_carry_a_csp_with_a_fresh_nonce_and_api_answers_do_not(client):
    first = client.get("/admin/login/")
    second = client.get("/admin/login/")
    policy = first["Content-Security-Policy"]
    assert (
        "script-src 'self' 'nonce-" in policy
        and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    )
    assert "frame-ancestors 'none'" in policy
    assert policy != second["Content-Security-Policy"]  # one nonce per response
    assert first["X-Frame-Options"] == "DENY"
    assert first["X-Content-Type-Options"] == "nosniff"
    api = client.get("/healthz")
    assert "Content-Security-Policy" not in api


def test_admin_login_is_throttled_after_repeated_failures(settings):
    cache.clear()
    settings.KB_ADMIN_LOGIN_MAX_PER_USER = 3
    User.objects.create_superuser("boss", password="right-password-123")
    client = Client()
    for _ in range(3):
        failed = client.post("/admin/login/", {"username": "boss", "password": "wrong"})
        assert failed.status_code == 200  # the form again, with an error
    blocked = client.post("/admin/login/", {"username": "boss", "password": "right-password-123"})
    assert blocked.status_code == 429
    assert int(blocked["Retry-After"]) == settings.KB_ADMIN_LOGIN_WINDOW
    # Another user from the same address is not locked out by boss's failures.
    User.objects.create_superuser("other", password="other-password-123")
    ok = client.post("/admin/login/", {"username": "other", "password": "other-password-123"})
    assert ok.status_code == 302
    cache.clear()


def test_api_answers_503_with_retry_after_when_the_database_is_away(client_rw, monkeypatch):
    from kb.actions import entries

    def unreachable(*args, **kwargs):
        raise OperationalError("connection failed: server closed the connection unexpectedly")

    monkeypatch.setattr(entries, "find_entry", unreachable)  # the entry read action's lookup
    response = client_rw.get("/api/v1/banks/acme/entries/deadbeef")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json()["error"]["code"] == "service_unavailable"


def test_pages_answer_503_when_the_database_is_away_in_middleware(monkeypatch):
    """A failure before any view (the session lookup) reaches handler500: 503, not 500."""
    from django.contrib.sessions.backends import db as session_db

    def unreachable(self, *args, **kwargs):
        raise OperationalError("connection to server failed: No such file or directory")

    monkeypatch.setattr(session_db.SessionStore, "load", unreachable)
    client = Client(raise_request_exception=False)
    client.cookies["sessionid"] = "x" * 32
    page = client.get("/workflows/")
    assert page.status_code == 503 and page["Retry-After"] == "5"
    assert page["Content-Type"].startswith("text/html")
    api = client.get("/api/v1/banks/acme/stale")
    assert api.status_code == 503
    assert api.json()["error"]["code"] == "service_unavailable"


def test_secret_key_is_generated_once_by_setup_and_only_read_by_the_settings(tmp_path):
    """``make setup``'s step writes the key once (six at a time: one wins, mode 0600); the
    settings read it, or DJANGO_SECRET_KEY; with neither they write nothing and, outside
    development and tests, stop with a sentence saying how to make one."""
    run = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KB_", "DJANGO_"))}
    env.update(KB_RUNDIR=str(run), DJANGO_SETTINGS_MODULE="config.settings")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "config.serving.secret"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    said = [p.communicate(timeout=60)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(line.startswith("Generated") for line in said) == 1, said
    stored = run / "secret_key"
    key = stored.read_text().strip()
    assert len(key) >= 50 and stored.stat().st_mode & 0o777 == 0o600
    assert read_secret_key(run) == key

    def settings_key(**extra) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", "import django; django.setup(); "
             "from django.conf import settings; print(settings.SECRET_KEY)"],
            cwd=ROOT, env={**env, **extra}, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    assert settings_key().stdout.strip().splitlines()[-1] == key
    configured = settings_key(DJANGO_SECRET_KEY="from-the-environment")
    assert configured.stdout.strip().splitlines()[-1] == "from-the-environment"
    empty = tmp_path / "empty"
    absent = settings_key(KB_RUNDIR=str(empty))
    assert absent.returncode != 0
    assert "No secret key: set DJANGO_SECRET_KEY, or run `make setup`" in absent.stderr
    development = settings_key(KB_RUNDIR=str(empty), DJANGO_DEBUG="1")
    assert development.returncode == 0, development.stderr
    assert not empty.exists()  # the settings wrote nothing, in either case


def _settings_in_subprocess(**env) -> dict:
    code = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        "d = s.DATABASES['default']; print(json.dumps({"
        "'pool': {k: v for k, v in (d['OPTIONS'].get('pool') or {}).items()}, "
        "'max_age': d['CONN_MAX_AGE'], 'aliases': sorted(s.DATABASES), "
        "'routers': s.DATABASE_ROUTERS, 'secure_cookie': s.SESSION_COOKIE_SECURE, "
        "'hsts': s.SECURE_HSTS_SECONDS, 'proxy': s.SECURE_PROXY_SSL_HEADER, "
        "'debug': s.DEBUG}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_served_settings_bound_connections_and_secure_https():
    served = _settings_in_subprocess(
        KB_DB_POOL="1",
        KB_DB_POOL_MAX="6",
        KB_HTTPS="1",
        DATABASE_REPLICA_URLS="postgres://reader@replica-a/kb,postgres://reader@replica-b/kb",
    )
    assert served["pool"]["max_size"] == 6 and served["max_age"] == 0
    assert served["aliases"] == ["default", "replica_0", "replica_1"]
    assert served["routers"] == ["config.serving.router.ReplicaRouter"]
    assert served["secure_cookie"] is True and served["hsts"] == 31536000
    assert served["proxy"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert served["debug"] is False
    plain = _settings_in_subprocess(KB_HTTPS="0")
    assert plain["secure_cookie"] is False and plain["hsts"] == 0 and plain["routers"] == []


def test_queue_depth_is_read_from_the_broker_and_task_durations_recorded(settings):
    import redis
    from prometheus_client import REGISTRY

    from config.celery import app
    from config.serving import metrics

    from .procs import FAULT_BROKER, new_queue

    queue = new_queue()
    redis.Redis.from_url(FAULT_BROKER).lpush(queue, "one", "two", "three")
    settings.CELERY_BROKER_URL = FAULT_BROKER
    settings.KB_METRICS_QUEUES = [queue, "never-declared-queue"]
    previous = app.conf.broker_url
    app.conf.broker_url = FAULT_BROKER
    try:
        families = {f.name: f for f in metrics.QueueDepthCollector().collect()}
    finally:
        app.conf.broker_url = previous
        redis.Redis.from_url(FAULT_BROKER).delete(queue)
    depths = {s.labels["queue"]: s.value for s in families["kb_queue_depth"].samples}
    assert depths == {queue: 3, "never-declared-queue": 0}
    assert families["kb_broker_up"].samples[0].value == 1

    class Task:
        name = "kb.embed_entries"

    metrics._task_prerun(task_id="t-1", task=Task())
    metrics._task_postrun(task_id="t-1", task=Task(), state="SUCCESS")
    count = REGISTRY.get_sample_value(
        "kb_task_duration_seconds_count", {"task": "kb.embed_entries", "state": "SUCCESS"}
    )
    assert count and count >= 1


def test_what_counts_as_the_database_being_away():
    import psycopg
    from django.db import DataError, IntegrityError
    from psycopg_pool import PoolTimeout

    from config.serving.database import is_database_unavailable

    def wrapped(cause):
        try:
            raise OperationalError(str(cause)) from cause
        except OperationalError as exc:
            return exc

    assert is_database_unavailable(OperationalError("server closed the connection"))
    assert is_database_unavailable(psycopg.OperationalError("the connection is lost"))
    assert is_database_unavailable(PoolTimeout("couldn't get a connection after 5.00 sec"))
    assert is_database_unavailable(wrapped(PoolTimeout("timeout")))
    assert not is_database_unavailable(wrapped(psycopg.errors.DeadlockDetected("deadlock")))
    assert not is_database_unavailable(DataError("value too long"))
    assert not is_database_unavailable(IntegrityError("duplicate key"))
    assert not is_database_unavailable(ValueError("not a database error"))
