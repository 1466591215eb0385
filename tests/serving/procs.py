"""Real processes for the serving tests: gunicorn web processes and Celery workers on the test
database, each on a loopback port or a Redis queue of its own, stopped by their own pid."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import kombu.pools
import redis
from django.db import connection, connections

from config.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
# A Redis database of these tests' own: a restarted worker restores every unacknowledged
# message of its database, so the killed workers' messages must not meet other tests' ones.
FAULT_BROKER = os.environ.get("KB_TEST_FAULT_BROKER_URL", "redis://127.0.0.1:6379/9")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def base_env(**extra: str) -> dict[str, str]:
    """The environment of a process serving this test's database."""
    env = dict(
        os.environ,
        KB_DATABASE_NAME=connection.settings_dict["NAME"],
        KB_EMBEDDER="hashing",  # these tests are about processes, not retrieval quality
        KB_WARM_EMBEDDER="0",
        KB_LOG_FORMAT="json",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    if os.environ.get("DATABASE_URL"):
        env["DATABASE_URL"] = (
            os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + connection.settings_dict["NAME"]
        )
    env.update(extra)
    return env


def new_queue() -> str:
    return f"kbserving-{uuid.uuid4().hex[:8]}"


def start_worker(env: dict, queue: str, pool: str = "solo", log: Path | None = None):
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
    return subprocess.Popen(
        [
            str(VENV_BIN / "celery"),
            "-A",
            "config",
            "worker",
            "-P",
            pool,
            "-c",
            "1",
            "-Q",
            queue,
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def start_web(env: dict, port: int, workers: int = 1, log: Path | None = None):
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(
        [
            str(VENV_BIN / "gunicorn"),
            "-c",
            "config/gunicorn.conf.py",
            "-w",
            str(workers),
            "config.asgi:application",
        ],
        cwd=ROOT,
        env={**env, "PORT": str(port)},
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn on port {port} exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    stop(proc)
    raise RuntimeError(f"gunicorn on port {port} did not answer /healthz")


def stop(proc, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
    """Stop a process started here and everything in its session (by its own group id)."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def wait_for(predicate, timeout: float = 120.0, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


def _reset_celery_caches() -> None:
    for attr in ("queues", "default_queue", "router"):
        celery_app.amqp.__dict__.pop(attr, None)
    celery_app.amqp._rtable = None
    celery_app.amqp._producer_pool = None
    if celery_app._pool is not None:
        celery_app._pool.force_close_all()
        celery_app._pool = None
    kombu.pools.reset()


@contextlib.contextmanager
def celery_client(broker: str, queue: str):
    """This test process sends tasks to ``queue`` on ``broker`` instead of running them."""
    redis.Redis.from_url(broker).ping()
    previous = {  # only what is changed below (dict(conf) can trip over celery's internals)
        key: getattr(celery_app.conf, key)
        for key in ("broker_url", "task_always_eager", "task_default_queue")
    }
    celery_app.conf.update(broker_url=broker, task_always_eager=False, task_default_queue=queue)
    _reset_celery_caches()
    try:
        yield
    finally:
        celery_app.conf.update(
            broker_url=previous.get("broker_url"),
            task_always_eager=previous.get("task_always_eager"),
            task_default_queue=previous.get("task_default_queue"),
        )
        _reset_celery_caches()


@contextlib.contextmanager
def table_held(table: str = "kb_historicalentry"):
    """Hold a SHARE lock on ``table`` from a connection of its own until the block ends: a job
    that writes to it (an import writes history rows) waits inside its write transaction, so
    the job stays running for as long as the test needs, however fast the box is. Reads do
    not wait for it."""
    holder = connections.create_connection("default")
    try:
        holder.set_autocommit(False)
        with holder.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {table} IN SHARE MODE")
        yield
    finally:
        holder.rollback()
        holder.close()
