"""The secret key when ``DJANGO_SECRET_KEY`` gives none: generated once into ``.run/secret_key``."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path


def load_or_create_secret_key(run_dir: Path) -> str:
    """The key every process of this checkout shares; created atomically by the first one.
    (The settings use ``DJANGO_SECRET_KEY`` instead when it is set.)"""
    path = run_dir / "secret_key"
    for _ in range(100):
        try:
            value = path.read_text().strip()
        except FileNotFoundError:
            value = ""
        if value:
            return value
        run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = run_dir / f".secret_key.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
        try:
            os.link(tmp, path)  # atomic: exactly one process's key wins
        except FileExistsError:
            time.sleep(0.01)
        finally:
            tmp.unlink(missing_ok=True)
    raise RuntimeError(f"Could not read or create the secret key at {path}.")
