"""gunicorn settings for ``make run``: uvicorn workers on ``config.asgi:application``.

Environment (declared with the others in ``config/environment.py``): ``PORT`` (8000),
``KB_BIND`` (127.0.0.1; 0.0.0.0 behind a load balancer), ``KB_WEB_WORKERS`` (processes),
``KB_WEB_TIMEOUT`` (seconds a request may take before its worker is restarted),
``PROMETHEUS_MULTIPROC_DIR`` (defaults to ``.run/prometheus-<bind>``).

Besides gunicorn's settings it sets the serving profile of the worker processes it starts
(pool on, JSON logs, one torch thread), as defaults the environment may override.
"""

import os
import shutil
import sys
from pathlib import Path

# gunicorn runs this file from its own script directory: make this checkout importable first.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from config.environment import Environment  # noqa: E402

env = Environment()

bind = [f"{env['KB_BIND']}:{env['PORT']}"]
# One process more than cores: while one waits on PostgreSQL another computes (measured on
# the 2-core box: README, "Serving").
workers = env["KB_WEB_WORKERS"]
worker_class = "config.serving.workers.KbUvicornWorker"
timeout = env["KB_WEB_TIMEOUT"]
graceful_timeout = 30
keepalive = 5
accesslog = None  # the app logs one JSON line per request, with its request id
errorlog = "-"
loglevel = env["KB_GUNICORN_LOG_LEVEL"]
proc_name = "knowledge-bank"
# gunicorn's control socket sits at one fixed path per user: several servers on one machine
# (tests, two checkouts) would fight over it.
control_socket_disable = True

# Served processes hold a bounded pool of database connections each (see config/serving).
os.environ.setdefault("KB_DB_POOL", "1")
os.environ.setdefault("KB_LOG_FORMAT", "json")
os.environ.setdefault("KB_DB_APPLICATION_NAME", "kb-web")
# One torch thread per process: the processes already use every core.
os.environ.setdefault("OMP_NUM_THREADS", str(env["KB_TORCH_THREADS"]))
os.environ.setdefault(
    "PROMETHEUS_MULTIPROC_DIR",
    str(env["PROMETHEUS_MULTIPROC_DIR"] or env["KB_RUNDIR"] / f"prometheus-{bind[0]}"),
)


def on_starting(server):
    # Samples of processes from an earlier run must not be added to this one's.
    directory = Environment()["PROMETHEUS_MULTIPROC_DIR"]  # set above
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True, exist_ok=True)


def child_exit(server, worker):
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def post_worker_init(worker):
    # Load the embedding models (writes' and queries') before this process takes requests, not
    # on its first query.
    if env["KB_WARM_EMBEDDER"]:
        from kb.services.embedding import warm_up

        try:
            warm_up()
        except Exception as exc:  # a remote embedder that is down must not stop the server
            worker.log.warning("embedder warm-up failed (first queries will retry): %s", exc)
