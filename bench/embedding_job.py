"""The embedding job alone, side by side with a baseline checkout (issue 24).

A bank of ``--entries`` Debian packages (the first of the index, imported without vectors) is
made once; then each round deletes the bank's vectors and runs ``run_embedding_job`` over its
entries in a child process of each checkout in turn (``--before``: a worktree of the baseline
commit, with the ``.venv``/``.models`` symlinks; alternating, the baseline first), with the real
model. Printed: entries/s per run, p50 over rounds, the ratio, the load average, and the
largest difference between the two checkouts' vectors (max |a - b| over every component).
``--profile`` runs this checkout once under cProfile instead (top functions by own time).

    .venv/bin/python bench/embedding_job.py --before /tmp/embedjob-base [--entries 3000]
        [--rounds 3] [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup(entries: int) -> int:
    """The bench bank (made once, kept between runs): its id."""
    from graph.ingest import debian
    from kb.models import Bank
    from kb.services.bulk import import_bank

    slug = f"bench-embedjob-{entries}"
    bank = Bank.objects.filter(slug=slug).first()
    if bank is None:
        bank = Bank.objects.create(slug=slug, name="embedding job bench")
        packages = debian.parse_index(debian.read_dumpavail())
        names = debian.select_packages(packages, limit=entries)
        text = debian.build_lines(packages, names).text()
        import_bank(bank, text, reason="bench: embedding job", embed=False)
    return bank.pk


def child(bank_id: int, profile: bool) -> None:
    """One run of the job in this checkout (``sys.path`` is the checkout's): JSON on stdout."""
    from kb.models import Bank, Entry, EntryEmbedding
    from kb.services.embedding import create_embedding_job, get_embedder, run_embedding_job

    bank = Bank.objects.get(pk=bank_id)
    ids = list(Entry.objects.filter(bank=bank).values_list("pk", flat=True))
    EntryEmbedding.objects.filter(bank=bank).delete()
    get_embedder().embed(["warm up"])
    job = create_embedding_job(bank, ids, "bench")
    started = time.perf_counter()
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
    written = run_embedding_job(ids, job.pk)
    seconds = time.perf_counter() - started
    if profile:
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    dump = Path(f"/tmp/embedjob-vectors-{os.getpid()}.npy")
    import numpy as np

    rows = EntryEmbedding.objects.filter(bank=bank).order_by("entry_id")
    out = []
    for row in rows:
        for dim in ("content", "useful_for", "context"):
            value = getattr(row, dim)
            out.append(np.zeros(384) if value is None else np.asarray(value))
    np.save(dump, np.asarray(out, dtype=np.float32))
    print(json.dumps({"written": written, "seconds": seconds, "vectors": str(dump)}))


def run_child(root: Path, bank_id: int, profile: bool = False) -> dict:
    script = f"""
import os, sys
sys.path.insert(0, {str(root)!r}); sys.path.insert(1, {str(ROOT / "bench")!r})
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django; django.setup()
import embedding_job
embedding_job.child({bank_id}, {profile})
"""
    done = subprocess.run(
        [str(root / ".venv/bin/python"), "-c", script],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        sys.exit(f"{root}: {done.stderr[-3000:]}")
    if profile:
        print(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="a worktree of the baseline commit")
    parser.add_argument("--entries", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import numpy as np

    bank_id = setup(args.entries)
    print(f"load average at start: {os.getloadavg()}", flush=True)
    if args.profile:
        result = run_child(ROOT, bank_id, profile=True)
        print(f"profiled: {result['written'] / result['seconds']:.0f} entries/s")
        return
    sides = {"before": args.before, "after": ROOT} if args.before else {"after": ROOT}
    rates: dict[str, list[float]] = {name: [] for name in sides}
    vectors: dict[str, str] = {}
    for round_ in range(args.rounds):
        for name, root in sides.items():
            result = run_child(root, bank_id)
            rate = result["written"] / result["seconds"]
            rates[name].append(rate)
            vectors[name] = result["vectors"]
            print(
                f"round {round_ + 1} {name}: {result['written']} entries in "
                f"{result['seconds']:.1f} s = {rate:.0f} entries/s "
                f"(load {os.getloadavg()[0]:.2f})",
                flush=True,
            )
    for name, values in rates.items():
        print(f"{name}: p50 {statistics.median(values):.0f} entries/s over {values}")
    if args.before:
        ratio = statistics.median(rates["after"]) / statistics.median(rates["before"])
        a, b = (np.load(vectors[n]) for n in ("before", "after"))
        print(f"ratio after/before: {ratio:.2f}x; vectors max |diff| {np.abs(a - b).max():.2e}")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
