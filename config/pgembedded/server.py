"""Start (or find) the embedded PostgreSQL server of this checkout."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from config.environment import Environment

_ENV = Environment()
DATA_DIR: Path = _ENV["KB_PGDATA"]
RUN_DIR: Path = _ENV["KB_RUNDIR"]

_lock = threading.Lock()
_socket_dir: str | None = None


def _prepare_runtime_dir() -> None:
    # pgserver keeps its inter-process lock under XDG_RUNTIME_DIR: every process of the
    # checkout must see the same one, and platformdirs insists on mode 0700.
    RUN_DIR.mkdir(mode=0o700, exist_ok=True)
    RUN_DIR.chmod(0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(RUN_DIR)


def ensure_server() -> str:
    """Return the socket directory of the running embedded server, starting it if needed."""
    global _socket_dir
    if _socket_dir is not None:
        return _socket_dir
    with _lock:
        if _socket_dir is None:
            _prepare_runtime_dir()
            import pgserver  # imported lazily: it reads XDG_RUNTIME_DIR at import time

            fresh = not (DATA_DIR / "PG_VERSION").exists()
            server = pgserver.get_server(DATA_DIR, cleanup_mode=None)
            socket_path = server.get_postmaster_info().socket_dir
            if fresh:
                _tune(str(socket_path))
            _socket_dir = str(socket_path)
    return _socket_dir


# Settings for a fresh data folder: the defaults (128 MB shared buffers) leave the HNSW
# indexes of a 100k-entry bank (~200 MB each) mostly outside the buffer cache.
TUNING = {
    "shared_buffers": _ENV["KB_PG_SHARED_BUFFERS"],
    "maintenance_work_mem": _ENV["KB_PG_MAINTENANCE_WORK_MEM"],
    "work_mem": "16MB",
    "max_connections": "200",
}


def _tune(socket_dir: str) -> None:
    """Apply :data:`TUNING` with ALTER SYSTEM and restart once, right after initdb."""
    import psycopg

    with psycopg.connect(
        host=socket_dir, user="postgres", dbname="postgres", autocommit=True
    ) as conn:
        for name, value in TUNING.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
    _pg_ctl("-w", "restart", "-m", "fast", "-l", str(DATA_DIR / "log"))


def _pg_ctl(*args: str) -> bool:
    import subprocess

    from pgserver._commands import POSTGRES_BIN_PATH

    cmd = [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(DATA_DIR), *args]
    if os.geteuid() == 0:
        cmd = ["su", "pgserver", "-s", "/bin/sh", "-c", " ".join(cmd)]
    return subprocess.run(cmd, check=False, capture_output=True).returncode == 0


def stop_server() -> bool:
    """Stop the embedded server cleanly (as the ``pgserver`` system user). True if it ran."""
    _prepare_runtime_dir()
    if not (DATA_DIR / "postmaster.pid").exists():
        return False
    return _pg_ctl("-w", "stop", "-m", "fast")
