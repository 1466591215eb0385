"""Traversal from a 20k-edge hub under a 2,000-expansion budget (issue 24): this checkout's
``traverse`` side by side with another checkout's, in one process, on one graph.

1. A graph made as ``bench/traverse.py`` makes its own, in a bank of its own
   (``bench-traverse-hub``: 100,000 entries, ~330,000 Zipf-shaped ``depends_on`` edges;
   loaded when missing), plus a planted hub shaped like
   Debian's libc6: one entry (key ``bench:libc6``) that ``--hub-edges`` (20,000) distinct
   entries depend on, so its reverse dependencies are a 20k-edge fan-in.
2. ``traverse`` from the hub, depth 4, ``max_expansions`` ``--budget`` (2,000), the API's
   other defaults, for ``in`` (reverse dependencies: who depends on libc6) and ``both``.
   With ``--baseline DIR`` the ``graph/traversal/walk.py`` and ``reads.py`` of that checkout
   (e.g. a ``git worktree add /tmp/base e0259db``) are loaded beside this one and the two
   take turns run by run (so both see the same load); their answers must be identical
   (``as_json``), else the bench stops. Printed per walk: p50 / p95 / mean ms; the CPU a
   walk costs, this process's plus its PostgreSQL backend's (medians of a second
   alternated series: what the walk would take on an idle box, where the wall clock of a
   loaded one mostly measures the wait for a core); SQL statements and the rows they
   returned; and what the walk found.

    .venv/bin/python bench/traverse_hub.py [--baseline /tmp/base] [--runs 40] [--budget 2000]
        [--hub-edges 20000] [--profile] [--as-action]

``--as-action`` adds this checkout's walk run as its traverse action runs it (the walk and
its answer under one pause of the cyclic collector). Every walk's time includes freeing it,
as a request does before it answers. ``--profile`` prints, for this checkout's walk, each statement's time and rows, and the
Python time outside the statements.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

HUB_KEY = "bench:libc6"


def plant_hub(cursor, bank, etype, n_edges: int, rng: np.random.Generator):
    """The hub entry and ``n_edges`` edges into it from distinct random entries (idempotent)."""
    from django.db import transaction
    from django.utils import timezone

    from bench.traverse import EDGE_COLUMNS, ENTRY_COLUMNS
    from kb.models import EntryKind

    cursor.execute("SELECT id FROM kb_entry WHERE bank_id = %s AND key = %s", [bank.pk, HUB_KEY])
    found = cursor.fetchone()
    hub_pk = found[0] if found else None
    if hub_pk is not None:
        cursor.execute(
            "SELECT count(*) FROM graph_edge WHERE to_entry_id = %s AND type_id = %s",
            [hub_pk, etype.pk],
        )
        if cursor.fetchone()[0] >= n_edges:
            return hub_pk
        cursor.execute("DELETE FROM graph_edge WHERE to_entry_id = %s", [hub_pk])
    print(f"planting the hub: {n_edges:,} entries depend on {HUB_KEY}…", flush=True)
    now = timezone.now()
    with transaction.atomic():
        if hub_pk is None:  # written as bench/traverse.py writes its entries (no history)
            kind_id = EntryKind.objects.get(bank=None, name="service").pk
            head = (bank.pk, kind_id, "11bc6000", "libc6", "GNU C Library: shared libraries.")
            tail = ("live", now, [], [], True, "", "", now, now, "", 0, "bench-hub", HUB_KEY)
            with cursor.copy(f"COPY kb_entry ({ENTRY_COLUMNS}, key) FROM STDIN") as copy:
                copy.write_row((*head, "", "", [], [], "{}", *tail))
            cursor.execute(
                "SELECT id FROM kb_entry WHERE bank_id = %s AND key = %s", [bank.pk, HUB_KEY]
            )
            hub_pk = cursor.fetchone()[0]
        cursor.execute(
            "SELECT id FROM kb_entry WHERE bank_id = %s AND id <> %s ORDER BY id", [bank.pk, hub_pk]
        )
        pks = np.array([row[0] for row in cursor.fetchall()], dtype=np.int64)
        sources = rng.choice(pks, size=n_edges, replace=False)
        with cursor.copy(f"COPY graph_edge ({EDGE_COLUMNS}) FROM STDIN") as copy:
            for source in sources:
                row = (bank.pk, int(source), hub_pk, etype.pk, "", "", "{}", "import", "bench")
                copy.write_row((*row, now, ""))
    cursor.execute("ANALYZE graph_edge")
    return hub_pk


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_walk(checkout: Path, name: str):
    """``graph/traversal/walk.py`` of another checkout, as a module of its own, bound to that
    checkout's ``reads.py`` (its SQL) when it has one, not to this checkout's."""
    reads_path = checkout / "graph/traversal/reads.py"
    if not reads_path.exists():
        return _load(checkout / "graph/traversal/walk.py", name)
    ours = sys.modules.get("graph.traversal.reads")
    sys.modules["graph.traversal.reads"] = _load(reads_path, f"{name}_reads")
    try:
        return _load(checkout / "graph/traversal/walk.py", name)
    finally:
        if ours is None:
            sys.modules.pop("graph.traversal.reads")
        else:
            sys.modules["graph.traversal.reads"] = ours


NOW = None  # one clock for every walk, so two checkouts' answers compare equal


class AsTheAction:
    """A checkout's walk run as its traverse action (``TraverseGraph.run``) runs it since
    the third round: the walk and its answer under one pause of the cyclic collector."""

    def __init__(self, walk):
        self.Limits, self.Step, self.traverse = walk.Limits, walk.Step, walk.traverse
        self.pause = walk.collector_paused


def run_once(walk, bank, hub, direction: str, budget: int):
    limits = walk.Limits(max_depth=4, max_expansions=budget)
    step = walk.Step(("depends_on",), direction)
    pause = getattr(walk, "pause", contextlib.nullcontext)
    started = time.perf_counter()
    with pause():
        result = walk.traverse(bank, hub, step, limits, valid_at=NOW, as_of=NOW)
        body = result.as_json()  # the API's answer is part of the cost
        del result  # and so is freeing the walk, as a request does before it answers
    return time.perf_counter() - started, body


class CpuClock:
    """CPU seconds spent by this process and by its PostgreSQL backend (``schedstat``: run
    time in nanoseconds). Their sum is what a walk costs whatever else the box runs: on a
    loaded box the wall clock mostly measures the wait for a core (``None`` where the
    backend's ``/proc`` entry cannot be read)."""

    def __init__(self):
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            self.path = Path(f"/proc/{cursor.fetchone()[0]}/schedstat")

    def server(self) -> float | None:
        try:
            return int(self.path.read_text().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            return None

    def measure(self, run) -> tuple[float, float | None]:
        """(client, server) CPU seconds of ``run()``."""
        client, server = time.process_time(), self.server()
        run()
        after = self.server()
        used = None if server is None or after is None else after - server
        return time.process_time() - client, used


def statements(walk, bank, hub, direction: str, budget: int) -> tuple[int, int, list]:
    """Statements and rows of one walk, with per-statement (ms, rows, first words)."""
    from django.db import connection

    log = []

    def wrapper(execute, sql, params, many, context):
        started = time.perf_counter()
        result = execute(sql, params, many, context)
        entry = [(time.perf_counter() - started) * 1000, 0, " ".join(sql.split()[:12])]
        log.append(entry)
        # Rows counted as they are read: a statement sent in pipeline mode has no row count
        # until then (and its time here is only the sending).
        cursor = context["cursor"]
        fetchall = cursor.fetchall

        def counted():
            rows = fetchall()
            entry[1] = len(rows)
            return rows

        cursor.fetchall = counted
        return result

    with connection.execute_wrapper(wrapper):
        run_once(walk, bank, hub, direction, budget)
    return len(log), sum(rows for _, rows, _ in log), log


def stats(samples: list[float]) -> str:
    ms = np.array(samples) * 1000
    return f"{np.percentile(ms, 50):.1f} / {np.percentile(ms, 95):.1f} / {ms.mean():.1f}"


def compare(walks: dict, bank, hub, direction: str, budget: int, runs: int) -> dict:
    """Alternate the walks run by run; check their answers are identical. Then the CPU each
    walk costs, alternated the same way."""
    samples: dict[str, list[float]] = {label: [] for label in walks}
    cpu: dict[str, list[tuple[float, float | None]]] = {label: [] for label in walks}
    bodies = {}
    for label, walk in walks.items():  # warm-up, and the answers compared
        bodies[label] = run_once(walk, bank, hub, direction, budget)[1]
    first, *others = bodies.values()
    for label, body in zip(list(bodies)[1:], others, strict=True):
        if body != first:
            raise SystemExit(f"{label}'s answer differs from this checkout's ({direction})")
    for i in range(runs):
        order = list(walks.items()) if i % 2 == 0 else list(walks.items())[::-1]
        for label, walk in order:
            samples[label].append(run_once(walk, bank, hub, direction, budget)[0])
    clock = CpuClock()
    for i in range(runs):
        order = list(walks.items()) if i % 2 == 0 else list(walks.items())[::-1]
        for label, walk in order:
            cpu[label].append(
                clock.measure(lambda w=walk: run_once(w, bank, hub, direction, budget))
            )
    return {"samples": samples, "cpu": cpu, "body": first}


def cpu_cells(used: list[tuple[float, float | None]]) -> str:
    """Median client / server / total CPU ms of the runs."""
    client = np.array([c for c, _ in used]) * 1000
    if any(s is None for _, s in used):
        return f"{np.median(client):.1f} / ? / ?"
    server = np.array([s for _, s in used]) * 1000
    return f"{np.median(client):.1f} / {np.median(server):.1f} / {np.median(client + server):.1f}"


def found(body: dict) -> str:
    counts = body["counts"]
    cut = ", ".join(body["limits_hit"]) or "complete"
    return (
        f"{counts['expansions']:,} expanded ({counts['read']:,} read), {counts['nodes']:,} "
        f"nodes, frontier {len(body['frontier']):,}, {counts['paths']} of "
        f"{counts['paths_found']:,} paths; {cut}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--hub-edges", type=int, default=20_000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--as-action", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.db import connection
    from django.utils import timezone

    from bench.traverse import machine, prepare
    from graph.traversal import walk as this_walk
    from kb.models import Entry

    rng = np.random.default_rng(20260404)
    with connection.cursor() as cursor:
        bank, etype, _ = prepare(cursor, "bench-traverse-hub", 100_000, 330_000, rng)
        hub = Entry.objects.get(pk=plant_hub(cursor, bank, etype, args.hub_edges, rng))
    global NOW
    NOW = timezone.now()
    walks = {"this checkout": this_walk}
    if args.baseline:
        walks[f"baseline ({args.baseline})"] = load_walk(args.baseline, "baseline_walk")
    if args.as_action:
        walks["this checkout as its action runs it"] = AsTheAction(this_walk)
    load_start = os.getloadavg()
    results = {d: compare(walks, bank, hub, d, args.budget, args.runs) for d in ("in", "both")}
    load_end = os.getloadavg()
    print(f"\nMachine: {machine()}")
    print(f"load average (1/5/15 min) {'/'.join(f'{x:.1f}' for x in load_start)} at start, "
          f"{'/'.join(f'{x:.1f}' for x in load_end)} at end")  # fmt: skip
    print(f"Hub {hub.short_id}: {args.hub_edges:,} entries depend on it; depth 4, budget "
          f"{args.budget:,}; {args.runs} runs each, alternated\n")  # fmt: skip
    print(
        "| walk from the hub | checkout | p50 / p95 / mean ms | CPU ms: client / server / total "
        "(medians) | statements | rows returned |"
    )
    print("|---|---|---|---|---|---|")
    for direction, outcome in results.items():
        for label, walk in walks.items():
            n, rows, _ = statements(walk, bank, hub, direction, args.budget)
            wall, cpu = stats(outcome["samples"][label]), cpu_cells(outcome["cpu"][label])
            cells = [direction, label, wall, cpu, str(n), f"{rows:,}"]
            print("| " + " | ".join(cells) + " |")
        base = [np.median(s) for s in outcome["samples"].values()]
        spent = [np.median([c + (s or 0) for c, s in u]) for u in outcome["cpu"].values()]
        for i, label in list(enumerate(walks))[1:]:
            print(
                f"|  | ratio ({label} ÷ this) | {base[i] / base[0]:.2f}× | "
                f"{spent[i] / spent[0]:.2f}× |  |  |"
            )
        print(f"\n{direction}: {found(outcome['body'])}; answers identical\n")
    if args.profile:
        for direction in ("in", "both"):
            _, _, log = statements(this_walk, bank, hub, direction, args.budget)
            print(f"statements of one walk ({direction}):")
            for ms, rows, words in log:
                print(f"  {ms:7.2f} ms {rows:6} rows  {words[:100]}")


if __name__ == "__main__":
    main()
