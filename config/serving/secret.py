"""The secret key when ``DJANGO_SECRET_KEY`` gives none: ``KB_RUNDIR/secret_key``.

Set-up writes it (``make setup``, hence ``make run``/``make dev``/``make test``, runs
``python -m config.serving.secret``), once, atomically: every process of the checkout then
shares it. The settings only read it (:func:`read_secret_key`); importing them writes nothing.
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from pathlib import Path

FILE_NAME = "secret_key"
SETUP_COMMAND = "python -m config.serving.secret"


def read_secret_key(run_dir: Path) -> str:
    """The key stored in ``run_dir`` ("" when there is none). Reads only."""
    try:
        return (run_dir / FILE_NAME).read_text().strip()
    except (FileNotFoundError, NotADirectoryError):
        return ""


def create_secret_key(run_dir: Path) -> tuple[Path, bool]:
    """Write a new key into ``run_dir`` unless one is there: (its path, whether this call
    wrote it). Safe to run concurrently: exactly one process's key wins (mode 0600)."""
    path = run_dir / FILE_NAME
    for _ in range(100):
        if read_secret_key(run_dir):
            return path, False
        run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = run_dir / f".{FILE_NAME}.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
        try:
            os.link(tmp, path)  # atomic: fails when another process's key is already there
            return path, True
        except FileExistsError:
            time.sleep(0.01)
        finally:
            tmp.unlink(missing_ok=True)
    raise RuntimeError(f"Could not read or create the secret key at {path}.")


def settings_secret_key(configured: str, run_dir: Path, *, debug: bool) -> str:
    """The settings' ``SECRET_KEY``: ``configured`` (``DJANGO_SECRET_KEY``), else the set-up's
    file. With neither, development (``debug``) and tests (pytest's process) get a key of this
    process only (its sessions end with it); anywhere else it is a clear error, not a silent
    key: the processes of one site must share theirs."""
    key = configured or read_secret_key(run_dir)
    if key:
        return key
    if debug or "pytest" in sys.modules:
        return secrets.token_urlsafe(50)
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        f"No secret key: set DJANGO_SECRET_KEY, or run `make setup` (or `{SETUP_COMMAND}`) "
        f"to generate {run_dir / FILE_NAME} once for every process of this checkout."
    )


def main() -> None:
    """The set-up step: the key file of ``KB_RUNDIR``, unless ``DJANGO_SECRET_KEY`` is set."""
    from config.environment import Environment

    env = Environment()
    if env["DJANGO_SECRET_KEY"]:
        print("DJANGO_SECRET_KEY is set: no secret key file is needed.")
        return
    path, created = create_secret_key(env["KB_RUNDIR"])
    print(f"{'Generated' if created else 'Kept'} the secret key in {path}.")


if __name__ == "__main__":
    main()
