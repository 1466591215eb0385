"""Merge and revert benchmark of Knowledge Bank: one entry with 1,000 edges merged away.

On the configured database (the embedded PostgreSQL unless DATABASE_URL), in a fresh bank
``bench-merge-<timestamp>`` that is deleted at the end (also on error or Ctrl-C):

1. Set-up (not timed): a pool of neighbour entries and, per repetition, a fresh pair
   ``keep``/``away``. ``away`` has ``--edges`` believed edges (default 1,000): in and out,
   five relation types, about 10% duplicating an edge ``keep`` already has (they collapse),
   and a few between ``keep`` and ``away`` (they would become self-loops and are dropped).
   ``keep`` has as many edges again of its own. Rows are bulk-inserted with their history
   rows under one ``import`` operation, as the services would leave them.
2. Per repetition, old and new side by side on the same pair: the row-by-row services of
   commit ``--old`` (loaded from git, default the last commit before the set-wise rewrite)
   merge and revert, then today's set-wise services merge and revert the same state. Each
   call runs under
   ``CaptureQueriesContext``: the SQL statements it issued are counted and grouped by shape,
   to show whether it costs a constant number of statements or some per edge (N+1).

    .venv/bin/python bench/merge.py [--edges 1000] [--repetitions 5] [--neighbours 600]
        [--old 34d3d58] [--no-old]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

RELATIONS = ["see_also", "cites", "part_of", "precedes", "corrects"]
SELF_LOOPS = [("keep", "see_also"), ("away", "cites"), ("keep", "part_of"), ("away", "corrects")]


def machine() -> dict[str, str]:
    cpu = re.search(r"model name\s*:\s*(.*)", Path("/proc/cpuinfo").read_text())
    mem_kib = int(Path("/proc/meminfo").read_text().split()[1])
    return {
        "nproc": str(len(os.sched_getaffinity(0))),
        "CPU": cpu[1].strip() if cpu else "?",
        "RAM": f"{mem_kib / 2**20:.1f} GiB",
    }


def shape(sql: str) -> str:
    """A statement with its literals and id lists folded, so repeats group together."""
    sql = re.sub(r"'(?:[^']|'')*'", "?", sql)
    sql = re.sub(r"\b\d+(\.\d+)?\b", "?", sql)
    sql = re.sub(r"\((\s*\?\s*,?)+\)", "(…)", sql)
    sql = re.sub(r'SAVEPOINT "?\w+"?', "SAVEPOINT s", sql)
    return re.sub(r"\s+", " ", sql)[:110]


def stats(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} / {min(values):.0f} / {max(values):.0f}"


class Setup:
    """Builds the benchmark rows in bulk, with history rows carrying one import operation."""

    def __init__(self, bank, neighbours: int, rng: random.Random):
        from kb.models import EntryKind, OperationKind
        from kb.unit_of_work import unit_of_work

        self.bank, self.rng = bank, rng
        self.kind = EntryKind.objects.get(bank=None, name="fact")
        self.serial = 0
        from graph.edges.vocab import edge_types_for_bank

        self.types = edge_types_for_bank(bank)
        with unit_of_work(bank, OperationKind.IMPORT, reason="benchmark set-up") as op:
            self.op = op
            self.pool = self.entries([f"Neighbour {i}" for i in range(neighbours)])

    def entries(self, titles: list[str]):
        from kb.models import Entry

        rows = []
        for title in titles:
            self.serial += 1
            rows.append(
                Entry(
                    bank=self.bank,
                    kind=self.kind,
                    short_id=f"{self.serial:08x}",
                    title=title,
                    content=f"Benchmark text of {title}.",
                )
            )
        return self._bulk(rows, Entry)

    def _bulk(self, rows, model):
        from simple_history.utils import bulk_create_with_history

        return bulk_create_with_history(
            rows,
            model,
            batch_size=1000,
            custom_historical_attrs={"operation_id": self.op.pk},
            default_change_reason="benchmark set-up",
        )

    def pair(self, repetition: int, edges: int):
        """A fresh keep/away pair; returns (keep, away, how many of away's edges collapse)."""
        from graph.models import Edge
        from kb.models import OperationKind
        from kb.unit_of_work import unit_of_work

        with unit_of_work(self.bank, OperationKind.IMPORT, reason="benchmark pair") as op:
            self.op = op
            keep, away = self.entries([f"Keep {repetition}", f"Away {repetition}"])
            slots = [(n, t, d) for n in self.pool for t in RELATIONS for d in ("out", "in")]
            picked = self.rng.sample(slots, 2 * edges)
            away_slots = picked[: edges - len(SELF_LOOPS)]
            collapse = away_slots[: edges // 10]  # keep already has these: they collapse
            keep_slots = collapse + picked[edges:][: edges - len(collapse)]
            rows = []
            for owner, owned in ((away, away_slots), (keep, keep_slots)):
                for neighbour, relation, direction in owned:
                    ends = (owner, neighbour) if direction == "out" else (neighbour, owner)
                    rows.append(self._edge(*ends, relation, f"{owner.title} / {neighbour.title}"))
            for source, relation in SELF_LOOPS:
                ends = (keep, away) if source == "keep" else (away, keep)
                rows.append(self._edge(*ends, relation, "between the pair"))
            self._bulk(rows, Edge)
        return keep, away, len(collapse)

    def _edge(self, source, target, relation, note):
        from graph.models import Edge

        return Edge(
            bank=self.bank,
            from_entry=source,
            to_entry=target,
            type=self.types[relation],
            note=note,
            evidence={"bench": True},
            source="import",
            actor="bench",
        )


# Where the modules the old code imports live since the layout change.
OLD_PATHS = {
    "graph.services.edges": "graph.edges.links",
    "graph.services.vocab": "graph.edges.vocab",
    "graph.services.aliases": "graph.resolution.aliases",
    "graph.services.timeutil": "graph.edges.clocks",
}


def old_curation(commit: str):
    """``graph/services/curation.py`` as it was at ``commit``, loaded as a module of its own
    (it imports today's edges, vocab and audit modules, which kept their interfaces)."""
    import subprocess
    import types

    source = subprocess.run(
        ["git", "show", f"{commit}:graph/services/curation.py"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    ).stdout
    for before, after in OLD_PATHS.items():
        source = source.replace(before, after)
    module = types.ModuleType("bench_old_curation")
    module.__file__ = f"<{commit}:graph/services/curation.py>"
    sys.modules[module.__name__] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def measured(call, *args, **kwargs):
    """(result, milliseconds, captured queries) of one call."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    # The query log is a deque of 9,000 by default: a revert of 1,000 edges issues more, and
    # CaptureQueriesContext counts by index into it. Make room, empty, then capture.
    if connection.queries_log.maxlen < 1_000_000:
        connection.queries_log = deque(maxlen=1_000_000)
    connection.queries_log.clear()
    with CaptureQueriesContext(connection) as ctx:
        started = time.perf_counter()
        result = call(*args, **kwargs)
        elapsed = (time.perf_counter() - started) * 1000
    return result, elapsed, list(ctx.captured_queries)


def rows_written(op_id: int) -> dict[str, int]:
    """History rows an operation wrote, per model: the rows it touched."""
    from graph.models import Alias, Edge
    from kb.models import Entry

    return {
        m.__name__.lower(): m.history.model.objects.filter(operation_id=op_id).count()
        for m in (Entry, Edge, Alias)
    }


def drop_bank(bank) -> None:
    """Remove the benchmark bank and every row of it, history included, in SQL (the ORM
    would write one deletion history row per entry and edge)."""
    from django.db import connection, transaction

    from graph.models import Alias, Edge, MergeProposal
    from kb.models import Bank, Entry, EntryEmbedding

    tables = [
        Alias.history.model,
        Edge.history.model,
        Entry.history.model,
        Alias,
        MergeProposal,
        Edge,
        EntryEmbedding,
        Entry,
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        for model in tables:
            cursor.execute(f"DELETE FROM {model._meta.db_table} WHERE bank_id = %s", [bank.pk])
        Bank.objects.filter(pk=bank.pk).delete()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=int, default=1000, help="edges of the entry merged away")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--neighbours", type=int, default=600)
    parser.add_argument("--old", default="34d3d58", help="commit of the row-by-row services")
    parser.add_argument("--no-old", action="store_true", help="measure the new services only")
    return parser.parse_args()


@dataclass
class Measured:
    """What the pairs measured, by ``"<step> (<impl>)"``."""

    times: dict[str, list[float]]
    counts: dict[str, list[int]] = field(default_factory=dict)
    shapes: dict[str, Counter] = field(default_factory=dict)
    touched: dict[str, dict] = field(default_factory=dict)
    pg: str = ""


def run_pairs(args, bank, impls: dict) -> Measured:
    """Merge and revert each pair with every implementation, in turn, on the same pairs."""
    from django.db import connection

    times = {f"{step} ({impl})": [] for impl in impls for step in ("merge", "revert")}
    m = Measured(times, {k: [] for k in times}, {k: Counter() for k in times})
    setup = Setup(bank, args.neighbours, random.Random(20240601))
    for rep in range(args.repetitions):
        keep, away, collapsing = setup.pair(rep, args.edges)
        merged_op = None
        for name in times:
            impl = name.split("(")[1].rstrip(")")
            merge, revert = impls[impl]
            if name.startswith("revert"):
                call, call_args = revert, (bank, merged_op, "bench undo")
            else:
                call, call_args = merge, (bank, keep.short_id, away.short_id, name)
            result, ms, queries = measured(call, *call_args)
            if name.startswith("merge"):
                merged_op = result.operation.pk
            op_id = result.operation.pk if hasattr(result, "operation") else result["operation"]
            times[name].append(ms)
            m.counts[name].append(len(queries))
            if rep == 0:
                m.shapes[name].update(shape(q["sql"]) for q in queries)
                m.touched[name] = {
                    "history rows": rows_written(op_id),
                    "result": result.as_json() if hasattr(result, "as_json") else result,
                }
        print(
            f"  pair {rep + 1}: "
            + ", ".join(f"{name} {times[name][-1]:.0f} ms" for name in times)
            + f" ({collapsing} edges expected to collapse)",
            flush=True,
        )
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        m.pg = cursor.fetchone()[0].split(" on ")[0]
    return m


def main() -> None:
    args = parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.utils import timezone

    from graph.curation.merge import merge_entries
    from graph.curation.revert import revert_operation
    from kb.models import Bank

    load_start = os.getloadavg()[0]
    slug = f"bench-merge-{timezone.now():%Y%m%d-%H%M%S}"
    bank = Bank.objects.create(slug=slug, name="Merge benchmark")
    print(f"bank {slug}: {args.neighbours} neighbours, {args.repetitions} pairs", flush=True)
    impls = {"new": (merge_entries, revert_operation)}
    if not args.no_old:
        old = old_curation(args.old)
        impls = {"old": (old.merge_entries, old.revert_operation), **impls}
    try:
        measured_pairs = run_pairs(args, bank, impls)
    finally:
        drop_bank(bank)
        print(f"bank {slug} deleted", flush=True)
    report(args, measured_pairs, load_start)


def report(args, m: Measured, load_start: float) -> None:
    """Rows touched, the most frequent statements, the speed-up and the markdown tables."""
    times = m.times
    print("\nRows touched (first pair):")
    for name, info in m.touched.items():
        result = {
            k: v
            for k, v in info["result"].items()
            if k not in ("self_loops_dropped", "collapsed_edges")
        }
        for listed in ("self_loops_dropped", "collapsed_edges"):
            if listed in info["result"]:
                result[listed] = len(info["result"][listed])
        print(f"  {name}: history rows {info['history rows']}; result {result}")
    for name in times:
        print(f"\nMost frequent statements of {name} (first pair):")
        for sql, n in m.shapes[name].most_common(6):
            print(f"  {n:>6} × {sql}")
    if "merge (old)" in times:
        for step in ("merge", "revert"):
            old_ms = statistics.median(times[f"{step} (old)"])
            new_ms = statistics.median(times[f"{step} (new)"])
            print(f"\n{step}: new is {old_ms / new_ms:.1f}× faster than old (p50)", end="")
        print()
    hw = machine()
    print(
        f"\n| {args.edges:,} edges of `away` | p50 / min / max (ms) | SQL statements per call |"
        "\n|---|---|---|"
    )
    for name in times:
        per_edge = statistics.median(m.counts[name]) / args.edges
        print(
            f"| {name} ({args.repetitions}×) | {stats(times[name])} | "
            f"{statistics.median(m.counts[name]):.0f} ({per_edge:.1f} per edge) |"
        )
    print(
        f"\n| machine | |\n|---|---|\n| nproc | {hw['nproc']} |\n| CPU | {hw['CPU']} |"
        f"\n| RAM | {hw['RAM']} |\n| PostgreSQL | {m.pg} |"
        f"\n| 1-min load average | {load_start:.2f} at start, {os.getloadavg()[0]:.2f} at end |"
    )


if __name__ == "__main__":
    main()
