"""Workflow gap-report benchmark: a generated 5,000-step process, report build time and findings.

What it does, on the configured database (the embedded PostgreSQL unless DATABASE_URL):

1. A bank ``bench-workflows`` (``--bank``) holds one process of N steps (default 5,000; about
   one in ten a decision point) with artifacts, roles and a known sprinkling of holes: decisions
   with one branch, dead-end side branches, unowned steps, requirements nothing produces,
   orphan steps no start reaches, and loops without an exit. Rows are written with
   ``bulk_create`` (no audit operation, no history, no signals): a benchmark bank needs none.
   A bank that already holds a process of the right size is reused.
2. It then builds the gap report ``--runs`` times (default 5) through
   ``workflows.services.reports.build_report`` — the first build creates every finding, the
   later ones carry them over — and times the parts: loading the subgraph, evaluating the six
   rules, and the whole build with its writes. It prints p50 and max per part, the query
   count of one build, and the findings by rule, with the machine it ran on.

    .venv/bin/python bench/workflows.py [--steps 5000] [--runs 5] [--bank bench-workflows]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


class _Writer:
    """Unsaved entries of the benchmark bank, numbered in order."""

    def __init__(self, bank, kinds, now) -> None:
        self.bank, self.kinds, self.now = bank, kinds, now
        self.counter = iter(range(1, 10**7))
        self.entries: list = []

    def new(self, title: str, kind: str, **metadata):
        from kb.models import Entry

        entry = Entry(
            bank=self.bank,
            short_id=f"{next(self.counter):08x}",
            title=title,
            content=f"{title}: generated for the workflow benchmark.",
            kind=self.kinds[kind],
            metadata=metadata,
            created_at=self.now,
            updated_at=self.now,
            status_changed_at=self.now,
        )
        self.entries.append(entry)
        return entry


def _branches_and_loops(new, main: list, rng, planted: Counter) -> tuple[list, list]:
    """The main line's flow, decision side branches (some dead or single), loops with and
    without an exit, and orphan steps; returns (flow, the extra steps)."""
    steps = len(main)
    flow = [(a, b, "precedes") for a, b in zip(main, main[1:], strict=False)]
    extra_steps: list = []
    for i, step in enumerate(main):
        if step.kind.name != "decision_point":
            continue
        roll = rng.random()
        if roll < 0.03:
            planted["single_branch_decision"] += 1
            continue
        side = new(f"Side step after {step.title}", "step")
        extra_steps.append(side)
        flow.append((step, side, "precedes"))
        if roll < 0.06:
            planted["dead_end"] += 1  # the side branch stops
        else:
            flow.append((side, main[i + rng.randint(2, 50)], "precedes"))
    for i in range(200, steps - 1, 250):  # loops with an exit: back to five steps earlier
        flow.append((main[i], main[i - 5], "precedes"))
    for k in range(5):  # loops without an exit, entered from a decision's side
        ring = [new(f"Loop {k} step {j}", "step") for j in range(3)]
        extra_steps.extend(ring)
        flow += [(ring[0], ring[1], "precedes"), (ring[1], ring[2], "precedes")]
        flow.append((ring[2], ring[0], "precedes"))
        flow.append((main[100 + k * 900], ring[0], "precedes"))
        planted["loop_without_exit"] += 1
    for k in range(10):  # orphans nothing reaches
        extra_steps.append(new(f"Orphan step {k}", "step", terminal=True))
        planted["unreachable_step"] += 1
    return flow, extra_steps


def _owners_and_artifacts(flow, all_steps, main, roles, artifacts, rng, planted) -> None:
    """Owners for most steps; artifacts produced by one step and required by two."""
    steps = len(main)
    for step in all_steps:
        if rng.random() < 0.02:
            planted["unowned_step"] += 1
            continue
        flow.append((step, rng.choice(roles), "owned_by"))
    for i, artifact in enumerate(artifacts):
        maker = main[min(i * 5, steps - 2)]
        if i % 20 != 0 and rng.random() < 0.02:
            planted["unproduced_requirement"] += 1
        elif i % 20 != 0:
            flow.append((maker, artifact, "produces"))
        needs = {min(i * 5 + rng.randint(1, 40), steps - 1) for _ in range(2)}
        flow += [(main[n], artifact, "requires") for n in sorted(needs)]


def _write(bank, entries, members, process, flow, now) -> int:
    """Entries and edges in bulk, in one transaction; returns the edge count."""
    from django.db import transaction
    from tqdm import tqdm

    from graph.models import Edge, EdgeType
    from kb.models import Entry

    types = {t.name: t for t in EdgeType.objects.filter(bank__isnull=True)}
    with transaction.atomic():
        Entry.objects.bulk_create(entries, batch_size=2000)
        edges = [
            Edge(bank=bank, from_entry=m, to_entry=process, type=types["part_of"], recorded_at=now)
            for m in members
        ]
        seen = set()
        for a, b, relation in flow:
            if (a.pk, b.pk, relation) in seen or a.pk == b.pk:
                continue
            seen.add((a.pk, b.pk, relation))
            edges.append(
                Edge(bank=bank, from_entry=a, to_entry=b, type=types[relation], recorded_at=now)
            )
        for start in tqdm(range(0, len(edges), 5000), desc="edges", unit="batch"):
            Edge.objects.bulk_create(edges[start : start + 5000])
    return len(edges)


def generate(bank, steps: int, seed: int = 7):
    """Write the process; return the process entry and the holes planted (for the summary)."""
    from django.utils import timezone

    from kb.services.entries import kinds_for_bank

    rng = random.Random(seed)
    now = timezone.now()
    writer = _Writer(bank, kinds_for_bank(bank), now)
    new = writer.new
    planted: Counter = Counter()
    process = new(f"Benchmark process ({steps} steps)", "process")
    roles = [new(f"Role {i}", "role") for i in range(20)]
    main = [
        new(
            f"Step {i}",
            "decision_point" if i % 10 == 5 and i < steps - 60 else "step",
            **({"start": True} if i == 0 else {}),
            **({"terminal": True} if i == steps - 1 else {}),
        )
        for i in range(steps)
    ]
    artifacts = [
        new(f"Artifact {i}", "artifact", **({"external": True} if i % 20 == 0 else {}))
        for i in range(steps // 5)
    ]
    flow, extra_steps = _branches_and_loops(new, main, rng, planted)
    all_steps = main + extra_steps
    _owners_and_artifacts(flow, all_steps, main, roles, artifacts, rng, planted)
    process.metadata = {"planted": dict(sorted(planted.items()))}  # read back by later runs
    n_edges = _write(bank, writer.entries, [*all_steps, *artifacts], process, flow, now)
    return process, planted, len(writer.entries), n_edges


def _process_for(bank, steps: int):
    """The bank's benchmark process of ``steps`` steps, generated when missing."""
    from kb.models import Entry
    from workflows.services.subgraph import processes_of

    process = processes_of(bank).first()
    if process is not None and f"({steps} steps)" in process.title:
        print(f"reusing {bank.slug}: {process.title}")
        return process
    if process is not None:  # a process of another size: start the bank over
        Entry.objects.filter(bank=bank).delete()
    t0 = time.perf_counter()
    process, _, n_entries, n_edges = generate(bank, steps)
    print(f"generated {n_entries} entries and {n_edges} edges in {time.perf_counter() - t0:.1f} s")
    return process


def _time_builds(bank, process, runs: int) -> dict:
    """Load, evaluate and build ``runs`` times; the timings and the last report."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from workflows.services.reports import build_report
    from workflows.services.rules import evaluate
    from workflows.services.subgraph import load_process_graph

    out = {"loads": [], "evals": [], "builds": [], "queries": 0}
    for _ in range(runs):
        t0 = time.perf_counter()
        graph = load_process_graph(bank, process)
        t1 = time.perf_counter()
        gaps = evaluate(graph)
        t2 = time.perf_counter()
        with CaptureQueriesContext(connection) as ctx:
            built = build_report(bank, process, trigger="on_demand", actor="bench")
        t3 = time.perf_counter()
        out["loads"].append((t1 - t0) * 1000)
        out["evals"].append((t2 - t1) * 1000)
        out["builds"].append((t3 - t2) * 1000)
        out["queries"] = len(ctx.captured_queries)
        out["report"], out["graph"] = built.report, graph
        assert len(gaps) == built.report.finding_count
    return out


def _print_summary(args, process, timed: dict, load_start: float) -> None:
    from django.db import connection

    report, graph, builds = timed["report"], timed["graph"], timed["builds"]
    cpu = platform.processor() or platform.machine()
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        pg = cursor.fetchone()[0]
    print()
    print(
        f"machine: {platform.node()} · {os.cpu_count()} CPUs ({cpu}) · Python "
        f"{platform.python_version()} · PostgreSQL {pg} · load {load_start:.2f} → "
        f"{os.getloadavg()[0]:.2f}"
    )
    print(
        f"process: {len(graph.steps)} steps and decisions, {len(graph.nodes)} entries in the "
        f"subgraph, {sum(len(v) for v in graph.requires.values())} requires, "
        f"{sum(len(v) for v in graph.produces.values())} produces"
    )
    print()
    print(f"{'part':<34}{'p50 ms':>10}{'max ms':>10}")
    rows = [
        ("load subgraph (6 queries)", timed["loads"]),
        ("evaluate six rules (pure Python)", timed["evals"]),
        ("build_report (load+rules+writes)", builds),
    ]
    for name, values in rows:
        print(f"{name:<34}{statistics.median(values):>10.1f}{max(values):>10.1f}")
    print(f"{'first build of this run':<34}{builds[0]:>10.1f}")
    print()
    print(f"queries per build: {timed['queries']}   findings: {report.finding_count}")
    print(f"{'rule':<26}{'found':>8}{'planted':>9}")
    for rule, count in dict(sorted(report.counts_by_rule.items())).items():
        expected = (process.metadata or {}).get("planted", {}).get(rule, "?")
        print(f"{rule:<26}{count:>8}{expected!s:>9}")
    print(
        f"\n{args.runs} builds of a {args.steps}-step process: p50 "
        f"{statistics.median(builds):.0f} ms, {report.finding_count} findings."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--bank", default="bench-workflows")
    args = parser.parse_args()
    setup_django()

    from kb.services.banks import ensure_bank

    load_start = os.getloadavg()[0]
    bank, _ = ensure_bank(args.bank, name="Workflow benchmark", kind="business")
    process = _process_for(bank, args.steps)
    timed = _time_builds(bank, process, args.runs)
    _print_summary(args, process, timed, load_start)


if __name__ == "__main__":
    main()
