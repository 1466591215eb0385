"""Start (or find) the embedded PostgreSQL server of this checkout."""

from __future__ import annotations

import os
import threading
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent.parent
DATA_DIR = Path(os.environ.get("KB_PGDATA", BASE_DIR / ".pgdata"))
RUN_DIR = Path(os.environ.get("KB_RUNDIR", BASE_DIR / ".run"))

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

            server = pgserver.get_server(DATA_DIR, cleanup_mode=None)
            socket_path = server.get_postmaster_info().socket_dir
            _socket_dir = str(socket_path)
    return _socket_dir


def stop_server() -> bool:
    """Stop the embedded server cleanly (as the ``pgserver`` system user). True if it ran."""
    import subprocess

    _prepare_runtime_dir()
    from pgserver._commands import POSTGRES_BIN_PATH

    if not (DATA_DIR / "postmaster.pid").exists():
        return False
    cmd = [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(DATA_DIR), "-w", "stop", "-m", "fast"]
    if os.geteuid() == 0:
        cmd = ["su", "pgserver", "-s", "/bin/sh", "-c", " ".join(cmd)]
    return subprocess.run(cmd, check=False).returncode == 0
