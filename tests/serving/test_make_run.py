"""`make run`'s processes as the Procfile declares them, under its runner (scripts/procrun.py),
on the test database: nothing eager.

- The four processes come up (a Redis of their own on a free port, gunicorn, a Celery worker,
  beat); a 1,000-line REST import answers 202 at once, a query answers while the import's job
  is still running on the worker, and the job goes queued → running → succeeded there.
- Ctrl-C (SIGINT to the runner): the worker's warm shutdown finishes the task in flight; past
  the stop timeout the task is cancelled and handed back to the queue, and another worker
  finishes it. Every process exits either way.

The jobs are held inside their write transaction by a table lock the test holds
(``table_held``), so each "still running" below is an ordering fact, not a timing.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
import redis

from kb.models import Job
from kb.services.tokens import create_token
from tests.pg_activity import other_sessions

from .procs import (
    FAULT_BROKER,
    ROOT,
    base_env,
    celery_client,
    free_port,
    new_queue,
    start_worker,
    stop,
    table_held,
    wait_for,
)

pytestmark = [
    pytest.mark.celery_worker,
    pytest.mark.xdist_group("serving_procs"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

RUNNER = ROOT / "scripts" / "procrun.py"
STARTED = re.compile(r"procrun \| (\w+) started \(pid (\d+)\)")


def import_lines(prefix: str, count: int) -> str:
    return "\n".join(
        f'{{"type": "entry", "key": "{prefix}:{i}", "title": "{prefix} fact {i}", '
        f'"content": "Line {i} of the {prefix} import.", "kind": "fact"}}'
        for i in range(count)
    )


def start_runner(env: dict, procfile: Path, port: int, log: Path, *options: str):
    return subprocess.Popen(
        [sys.executable, str(RUNNER), "-f", str(procfile), "-p", str(port), *options],
        cwd=ROOT,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def started(log: Path) -> dict[str, int]:
    """Process name → pid, as the runner announced them."""
    return {name: int(pid) for name, pid in STARTED.findall(log.read_text())}


def lines_of(log: Path, name: str) -> list[str]:
    return [line for line in log.read_text().splitlines() if f" {name} " in line[:30]]


def session_alive(sid: int) -> bool:
    """Whether any process is left in session ``sid`` (each Procfile process leads one)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            return True
    return False


def interrupt(runner, timeout: float = 120) -> int:
    runner.send_signal(signal.SIGINT)
    return runner.wait(timeout=timeout)


def job_status(job_id: str) -> str:
    return Job.objects.get(public_id=job_id).status


def worker_procfile(tmp_path: Path) -> Path:
    """A Procfile holding the real one's worker line only (the broker is the suite's Redis)."""
    line = next(x for x in (ROOT / "Procfile").read_text().splitlines() if x.startswith("worker:"))
    path = tmp_path / "Procfile"
    path.write_text(line + "\n")
    return path


def _ready(url: str):
    try:
        response = httpx.get(f"{url}/readyz", timeout=5)
    except httpx.HTTPError:
        return None
    return response.json()["checks"] if response.status_code == 200 else None


def test_make_run_serves_and_a_rest_import_runs_on_its_worker(
    bank, make_entry, hashing_embedder, tmp_path
):
    make_entry("Checkout retries", content="Retry the checkout call after a 409 conflict.")
    _, token = create_token("run-agent", [bank], "read,write,curate")
    redis_port, port, log = free_port(), free_port(), tmp_path / "run.log"
    env = base_env(
        CELERY_BROKER_URL=f"redis://127.0.0.1:{redis_port}/0",
        KB_REDIS_PORT=str(redis_port),
        KB_RUNDIR=str(tmp_path / "run"),
        CELERY_TASK_DEFAULT_QUEUE=new_queue(),
        KB_WEB_WORKERS="2",
        KB_WORKER_CONCURRENCY="1",  # one task at a time: a second job waits, queued
    )
    # make run's set-up step for this run dir: the settings only read the key it writes.
    subprocess.run([sys.executable, "-m", "config.serving.secret"], cwd=ROOT, env=env, check=True)
    runner = start_runner(env, ROOT / "Procfile", port, log, "--stop-timeout", "30")
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_for(lambda: _ready(url), timeout=150, interval=0.5) == {
            "database": "ok",
            "broker": "ok",
        }, log.read_text()[-3000:]
        assert set(started(log)) == {"web", "worker", "beat", "broker"}
        assert redis.Redis(port=redis_port).ping()  # the broker the runner started
        _import_meanwhile_a_query(url, token, bank.slug)
        assert runner.poll() is None, "the runner stopped by itself"
        assert interrupt(runner) == 0
    finally:
        stop(runner)
    text = log.read_text()
    pids = started(log)
    assert not any(session_alive(pid) for pid in pids.values()), text[-3000:]
    assert "SIGKILL" not in text and "SIGQUIT" not in text, text[-3000:]
    order = [m.group(1) for m in re.finditer(r"procrun \| (\w+) stopped", text)]
    assert order[-1] == "broker", order  # the broker outlives the worker
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=redis_port, socket_connect_timeout=2).ping()


def _import_meanwhile_a_query(url: str, token: str, slug: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    ndjson = {"Content-Type": "application/x-ndjson"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        with table_held("kb_historicalentry"):
            big = client.post(f"/api/v1/banks/{slug}/import", content=import_lines("big", 1000), headers=ndjson)  # fmt: skip
            assert big.status_code == 202, big.text
            big_id = big.json()["job"]
            assert job_status(big_id) != "succeeded"  # 202 came before the job finished
            assert wait_for(lambda: job_status(big_id) == "running", timeout=120)
            # It runs on the worker: the worker's session waits for the lock the test holds.
            assert wait_for(lambda: _waiting("kb-worker") == 1, timeout=60)
            small = client.post(f"/api/v1/banks/{slug}/import", content=import_lines("small", 3), headers=ndjson)  # fmt: skip
            assert small.status_code == 202, small.text
            small_id = small.json()["job"]
            query = client.post(f"/api/v1/banks/{slug}/query", json={"query": "checkout retries"})
            assert query.status_code == 200, query.text
            assert query.json()["results"], query.text
            # The query answered while the import was still running on the worker, and the
            # next job waited for the worker's one process, queued.
            assert job_status(big_id) == "running"
            assert job_status(small_id) == "queued"
            assert _waiting("kb-web") == 0
        for job_id, created in ((big_id, 1000), (small_id, 3)):
            body = wait_for(lambda j=job_id: _finished(client, j), timeout=180, interval=0.5)
            assert body is not None and body["status"] == "succeeded", body
            assert body["result"]["created"] == created
            assert body["created_at"] < body["started_at"] < body["finished_at"]
            assert Job.objects.get(public_id=job_id).attempts == 1


def _finished(client: httpx.Client, job_id: str):
    body = client.get(f"/api/v1/jobs/{job_id}").json()
    return body if body["status"] in ("succeeded", "failed") else None


def _waiting(application: str) -> int:
    """Sessions of ``application`` (``KB_DB_APPLICATION_NAME``) waiting for a lock."""
    return other_sessions("application_name = %s AND wait_event_type = 'Lock'", [application])


def _writing_backends() -> int:
    return other_sessions("backend_xid IS NOT NULL")


@pytest.fixture
def worker_queue():
    queue = new_queue()
    with celery_client(FAULT_BROKER, queue):
        yield queue


def _worker_env(queue: str) -> dict:
    broker = urlparse(FAULT_BROKER)
    return base_env(
        CELERY_BROKER_URL=FAULT_BROKER,
        CELERY_TASK_DEFAULT_QUEUE=queue,
        KB_REDIS_PORT=str(broker.port or 6379),
        KB_WORKER_CONCURRENCY="1",
    )


def _queue_import(client_rw, bank, lines: int) -> str:
    response = client_rw.post(
        f"/api/v1/banks/{bank.slug}/import",
        data=import_lines("held", lines),
        content_type="application/x-ndjson",
    )
    assert response.status_code == 202, response.content
    return response.json()["job"]


def test_ctrl_c_lets_the_workers_task_in_flight_finish(worker_queue, bank, client_rw, tmp_path):
    log = tmp_path / "run.log"
    runner = start_runner(
        _worker_env(worker_queue), worker_procfile(tmp_path), free_port(), log,
        "--stop-timeout", "300",
    )  # fmt: skip
    try:
        with table_held("kb_historicalentry"):
            job_id = _queue_import(client_rw, bank, 50)
            assert wait_for(lambda: job_status(job_id) == "running", timeout=120), log.read_text()
            runner.send_signal(signal.SIGINT)
            assert wait_for(
                lambda: any("Warm shutdown" in x for x in lines_of(log, "worker")), timeout=60
            ), log.read_text()
            # Told to stop, the worker still runs its task: it and the runner wait for it.
            assert runner.poll() is None and job_status(job_id) == "running"
        assert runner.wait(timeout=120) == 0
    finally:
        stop(runner)
    text = log.read_text()
    assert "SIGQUIT" not in text and "SIGKILL" not in text, text[-3000:]
    assert not any(session_alive(pid) for pid in started(log).values())
    job = Job.objects.get(public_id=job_id)
    assert (job.status, job.attempts) == ("succeeded", 1), (job.result, job.errors)
    assert job.result["created"] == 50


def test_ctrl_c_past_the_stop_timeout_hands_the_task_back(worker_queue, bank, client_rw, tmp_path):
    log = tmp_path / "run.log"
    env = _worker_env(worker_queue)  # KB_CELERY_VISIBILITY_TIMEOUT: the default hour
    runner = start_runner(
        env, worker_procfile(tmp_path), free_port(), log,
        "--stop-timeout", "2", "--kill-after", "60",
    )  # fmt: skip
    second = None
    try:
        with table_held("kb_historicalentry"):
            job_id = _queue_import(client_rw, bank, 50)
            assert wait_for(lambda: job_status(job_id) == "running", timeout=120), log.read_text()
            assert interrupt(runner) == 0
        text = log.read_text()
        assert "SIGQUIT" in text and "SIGKILL" not in text, text[-3000:]
        assert not any(session_alive(pid) for pid in started(log).values())
        # The cancelled run's session rolls back once the lock is gone; its message is back in
        # the queue now, not an hour from now (the visibility timeout).
        assert wait_for(lambda: _writing_backends() == 0, timeout=30)
        queued = redis.Redis.from_url(FAULT_BROKER).llen(worker_queue)
        assert queued == 1, f"{queued} messages in the queue"
        job = Job.objects.get(public_id=job_id)
        assert (job.status, job.attempts) == ("running", 1)
        second = start_worker(env, worker_queue, log=tmp_path / "second.log")
        assert wait_for(lambda: job_status(job_id) == "succeeded", timeout=180)
    finally:
        stop(runner)
        if second is not None:
            stop(second)
    job = Job.objects.get(public_id=job_id)
    assert job.attempts == 2 and job.result["interrupted_attempts"] == 1
    assert job.result["created"] == 50
