"""The gunicorn worker class: uvicorn (ASGI) with uvloop and httptools."""

from __future__ import annotations

from uvicorn_worker import UvicornWorker

from config.environment import Environment


class KbUvicornWorker(UvicornWorker):
    CONFIG_KWARGS = {
        "loop": "uvloop",
        "http": "httptools",
        # "auto": Django answers only HTTP; an outer ASGI wrapper (MCP) may use lifespan.
        "lifespan": "auto",
        # Past this many open connections in one process uvicorn answers 503 at once, so a
        # flood queues in no process beyond what its threads and database pool can take.
        "limit_concurrency": Environment()["KB_WEB_MAX_CONNECTIONS"],
        "timeout_keep_alive": 5,
    }
