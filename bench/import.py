"""Bulk import benchmark: the Debian package index through ``import_bank``, old and new.

1. Side by side on one slice (``--slice`` packages, default 1,500, the first of the index):
   the row-by-row importer of commit ``--old`` (``kb/services/bulk.py`` and
   ``graph/services/bulk_lines.py`` loaded from git) and today's set-wise importer (COPY with
   history rows stamped with the import operation), each into a fresh bank, vectors excluded.
2. The whole index (every package, maintainer and section, a Provides alias per provider of
   each virtual package, about 400k edges) through today's importer into a fresh bank,
   vectors excluded, then the same file again (a re-import that must change nothing). The
   seconds of each phase (parse, validate, write per line type, commit) are printed for both,
   with the load average.
3. The vectors, separately: the embedding job over the new entries in batches (``--embed``;
   the test-only hashing embedder unless ``--real-embedder``).
4. The bank against ``apt-cache`` (the agreement check of ``bench/debian.py``).

Banks are ``bench-import-*`` and are dropped at the end (``--keep`` keeps the whole-index
bank).

    .venv/bin/python bench/import.py [--slice 1500] [--old 34d3d58] [--no-old] [--embed]
        [--sample 200] [--keep]

(``--slice 600`` keeps the row-by-row side short: it runs at about 13 lines/s.)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


# Where the modules the old code imports live since the layout change.
OLD_PATHS = {
    "graph.services.edges": "graph.edges.links",
    "graph.services.vocab": "graph.edges.vocab",
    "graph.services.aliases": "graph.resolution.aliases",
    "graph.services.timeutil": "graph.edges.clocks",
}


def load_old(commit: str):
    """The importer as it was at ``commit``: its own line-type registry, its own modules."""

    def module(name: str, path: str, replace: dict[str, str]):
        source = subprocess.run(
            ["git", "show", f"{commit}:{path}"],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
        for old, new in {**OLD_PATHS, **replace}.items():
            source = source.replace(old, new)
        mod = types.ModuleType(name)
        mod.__file__ = f"<{commit}:{path}>"
        sys.modules[name] = mod
        exec(compile(source, mod.__file__, "exec"), mod.__dict__)
        return mod

    bulk = module("bench_old_bulk", "kb/services/bulk.py", {})
    lines = module(
        "bench_old_bulk_lines",
        "graph/services/bulk_lines.py",
        {"from kb.services.bulk import": "from bench_old_bulk import"},
    )
    lines.register()
    return bulk


def drop_bank(bank) -> None:
    """Remove a benchmark bank and its rows, history included, in SQL."""
    from django.db import connection, transaction

    from graph.models import Alias, Edge, MergeProposal
    from kb.models import Bank, Entry, EntryEmbedding, Job, Operation

    tables = [
        Alias.history.model,
        Edge.history.model,
        Entry.history.model,
        Alias,
        MergeProposal,
        Edge,
        EntryEmbedding,
        Entry,
        Job,
        Operation,
    ]
    with connection.cursor() as cursor:
        # Fresh statistics first: the per-row cascade checks of the entry deletion must look
        # edges up by entry, not walk the bank's (just deleted) edges for every entry.
        cursor.execute("ANALYZE graph_edge; ANALYZE graph_alias; ANALYZE kb_entry")
    with transaction.atomic(), connection.cursor() as cursor:
        for model in tables:
            cursor.execute(f"DELETE FROM {model._meta.db_table} WHERE bank_id = %s", [bank.pk])
        Bank.objects.filter(pk=bank.pk).delete()


def first_provider_only(lines: list[dict]) -> str:
    """The file with, per alias form, the first alias line only (the old importer's rule)."""
    from graph.resolution.aliases import normalize

    seen: set[str] = set()
    kept = []
    for line in lines:
        if line["type"] == "alias":
            form = normalize(line["alias"])
            if form in seen:
                continue
            seen.add(form)
        kept.append(line)
    return "\n".join(json.dumps(line, ensure_ascii=False) for line in kept) + "\n"


def counted(result: dict) -> str:
    keys = ("created", "aliases_created", "edges_created", "unchanged", "edges_unchanged")
    return ", ".join(f"{k} {result.get(k, 0)}" for k in keys)


def searchable(rows, to_embed: list[int], data_seconds: float, limit: int = 0) -> None:
    """The vectors of the whole index as the embedding job computes them, and the time from
    the start of the import to fully searchable (data plus vectors)."""
    from django.conf import settings

    from kb.services.embedding import embed_in_batches, get_embedder

    embedder = get_embedder()
    runtime = getattr(embedder, "runtime", "") or settings.KB_EMBEDDER
    started = time.perf_counter()
    last = [started]

    def progress(done: int, total: int) -> None:
        if time.perf_counter() - last[0] >= 30 or done == total:
            last[0] = time.perf_counter()
            rate = done / (last[0] - started)
            print(
                f"    vectors {done}/{total} ({rate:.0f} entries/s, load {os.getloadavg()[0]:.1f})",
                flush=True,
            )

    todo = to_embed[:limit] if limit else to_embed
    written = embed_in_batches(todo, progress=progress)
    seconds = time.perf_counter() - started
    runtime = getattr(embedder, "runtime", "") or runtime
    rows.append(
        (
            f"vectors ({embedder.name}, {runtime}, batches of {settings.KB_EMBED_BATCH_SIZE})",
            f"{seconds:.1f} s for {written} entries ({written / seconds:.0f}/s)",
        )
    )
    if len(todo) < len(to_embed):
        projected = seconds * len(to_embed) / max(1, len(todo))
        rows.append(
            (
                f"fully searchable, PROJECTED from {len(todo)} of {len(to_embed)} entries",
                f"{data_seconds + projected:.1f} s (vectors {projected:.0f} s)",
            )
        )
    else:
        rows.append(("fully searchable (data + vectors)", f"{data_seconds + seconds:.1f} s"))
    rows.append(("  load average after", " ".join(f"{x:.2f}" for x in os.getloadavg())))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slice", type=int, default=1500)
    parser.add_argument("--old", default="34d3d58")
    parser.add_argument("--no-old", action="store_true")
    parser.add_argument("--embed", action="store_true")
    parser.add_argument("--real-embedder", action="store_true")
    parser.add_argument("--sample", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--searchable-only",
        action="store_true",
        help="Only the whole index timed to fully searchable (data, then vectors): no slice, "
        "no re-import, no agreement check. Implies --embed.",
    )
    parser.add_argument(
        "--vectors-limit",
        type=int,
        default=0,
        help="With --searchable-only: embed only this many of the new entries and project the "
        "rest at the measured rate (labelled as projected), for a busy machine.",
    )
    args = parser.parse_args()
    if args.searchable_only:
        args.embed = args.no_old = True
    return args


class Rows(list):
    def append(self, row):  # print each figure as soon as it is measured
        print(f"  = {row[0]}: {row[1]}", flush=True)
        super().append(row)


def progress_printer(label: str):
    last = {}

    def progress(phase: str, done: int, total: int) -> None:
        if phase.startswith("writing ") and (done == total or done - last.get(phase, 0) >= 100_000):
            last[phase] = done
            print(f"    {label}: {phase} {done}/{total}", flush=True)

    return progress


def timed_import(importer, bank, text, label, **kwargs):
    started = time.perf_counter()
    result = importer(bank, text, reason=f"bench: {label}", **kwargs)
    return result, time.perf_counter() - started


def phase_rows(rows: Rows, label: str, timings: dict, seconds: float) -> None:
    """Seconds per phase of one import (``import_bank(timings=...)``), in order."""
    print(f"  phases of {label} (load average {os.getloadavg()[0]:.2f}):", flush=True)
    for phase, spent in timings.items():
        # "edges: …" are the parts of "write edge lines", shown under it.
        name = f"  {label}: {phase}" if ":" not in phase else f"      {phase}"
        rows.append((name, f"{spent:.1f} s ({spent / seconds:.0%})"))


def slice_side_by_side(args, packages: dict, rows: Rows, banks: list, stamp: str) -> None:
    """1. Old and new importers side by side on one slice."""
    from graph.ingest import debian
    from kb.models import Bank
    from kb.services.bulk import import_bank

    names = debian.select_packages(packages, limit=20 if args.searchable_only else args.slice)
    sliced = debian.build_lines(packages, names)
    # The old importer refuses a surface form naming two entries (issue 12): both sides of the
    # comparison take the same file with the first provider's alias only.
    text = first_provider_only(sliced.lines)
    print(
        f"slice: {len(names)} packages → {len(sliced.lines)} lines "
        "(one alias per virtual package, for the old importer)",
        flush=True,
    )
    times = {}
    if not args.no_old:
        old = load_old(args.old)
        bank = Bank.objects.create(slug=f"bench-import-old-{stamp}", name="old importer")
        banks.append(bank)
        result, seconds = timed_import(old.import_bank, bank, text, "old slice")
        times["old"] = seconds
        rows.append((f"slice, old importer ({args.old})", f"{seconds:.1f} s ({counted(result)})"))
    bank = Bank.objects.create(slug=f"bench-import-new-{stamp}", name="new importer")
    banks.append(bank)
    result, seconds = timed_import(import_bank, bank, text, "new slice", embed=False)
    times["new"] = seconds
    rows.append(("slice, set-wise importer", f"{seconds:.1f} s ({counted(result)})"))
    if "old" in times:
        rows.append(("slice speed-up", f"{times['old'] / times['new']:.1f}×"))


def history_rows(operation_id: int) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM graph_historicaledge WHERE operation_id = %s", [operation_id]
        )
        count = cursor.fetchone()[0]
        cursor.execute("ANALYZE kb_entry; ANALYZE graph_edge; ANALYZE graph_alias")
    return count


def whole_index(args, packages: dict, rows: Rows, banks: list, stamp: str):
    """2. The whole index into a fresh bank; returns (bank, built lines, to_embed, seconds)."""
    from graph.ingest import debian
    from kb.models import Bank
    from kb.services.bulk import import_bank

    built = debian.build_lines(packages)
    text = built.text()
    print(
        f"whole index: {len(built.lines)} lines ({len(text) / 1e6:.0f} MB): "
        + ", ".join(f"{k} {v}" for k, v in built.counts.items()),
        flush=True,
    )
    whole = Bank.objects.create(slug=f"bench-import-whole-{stamp}", name="Debian index")
    if not args.keep:
        banks.append(whole)
    timings: dict[str, float] = {}
    result, seconds = timed_import(
        import_bank,
        whole,
        text,
        "whole index",
        embed=False,
        progress=progress_printer("whole"),
        timings=timings,
    )
    to_embed = result.pop("to_embed", [])
    rows.append(("whole index, set-wise importer", f"{seconds:.1f} s ({counted(result)})"))
    phase_rows(rows, "whole index", timings, seconds)
    rows.append(("  lines per second", f"{len(built.lines) / seconds:,.0f}"))
    rows.append(
        ("  edge history rows of the import operation", f"{history_rows(result['operation'])}")
    )
    return whole, text, to_embed, seconds


def reimport_and_check(args, whole, text: str, to_embed: list, packages: dict, rows: Rows):
    """The same file again (must change nothing), the vectors, then 3. agreement with apt."""
    from kb.services.bulk import import_bank
    from kb.services.embedding import embed_in_batches

    timings: dict[str, float] = {}
    again, seconds = timed_import(
        import_bank, whole, text, "re-import", embed=False, timings=timings
    )
    rows.append(
        (
            "re-import of the same file",
            f"{seconds:.1f} s (operation {again['operation']}, {counted(again)})",
        )
    )
    phase_rows(rows, "re-import", timings, seconds)
    if args.embed:
        started = time.perf_counter()
        written = embed_in_batches(to_embed)
        seconds = time.perf_counter() - started
        rows.append(("vectors (embedding job, batches of 256)", f"{seconds:.1f} s for {written}"))
    from debian import agreement_rows  # bench/debian.py

    rows += agreement_rows(whole, packages, args.sample, args.seed)


def print_rows(rows: Rows, banks: list) -> None:
    width = max(len(k) for k, _ in rows)
    print()
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print(
        f"\nmachine: {len(os.sched_getaffinity(0))} cores; load average at end: "
        f"{os.getloadavg()[0]:.2f}"
    )
    print(json.dumps({"banks_dropped": [b.slug for b in banks]}))


def main() -> None:
    args = parse_args()
    if not args.real_embedder:
        os.environ["KB_EMBEDDER"] = "hashing"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.utils import timezone

    from graph.ingest import debian

    stamp = f"{timezone.now():%H%M%S}"
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    t = time.perf_counter()
    packages = debian.parse_index(debian.read_dumpavail())
    print(f"index: {len(packages)} packages, read and parsed in {time.perf_counter() - t:.1f}s")
    rows, banks = Rows(), []
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still drop the banks
    try:
        slice_side_by_side(args, packages, rows, banks, stamp)
        whole, text, to_embed, data_seconds = whole_index(args, packages, rows, banks, stamp)
        if args.searchable_only:
            searchable(rows, to_embed, data_seconds, args.vectors_limit)
        else:
            reimport_and_check(args, whole, text, to_embed, packages, rows)
    finally:
        for bank in banks:
            drop_bank(bank)
    print_rows(rows, banks)


if __name__ == "__main__":
    main()
