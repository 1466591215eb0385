"""Traversal benchmark of Knowledge Bank: the budgeted visited-set walk against the recursive
full-path enumeration of ``001_*``, on one Zipf-shaped graph, in the same run.

1. Bank ``bench-traverse`` (``--bank``): 100,000 "service" entries and ~330,000 edges of the
   bank-defined relation ``depends_on``. Edge ends are drawn so degrees are Zipf-distributed:
   each end is, with probability 0.3, a Zipf(s = 1) pick over a fixed random ranking of the
   entries, else uniform; the top-ranked entry becomes a hub of ~15,000 edges while the median
   entry has a handful. Duplicate pairs and self-loops are dropped. Rows are written with
   ``COPY`` straight into ``kb_entry`` and ``graph_edge``: no audit operation and no
   simple-history rows, which a benchmark bank does not need (through the services a load
   this size would take an hour). A bank already holding the entries and edges is reused.
2. ``graph.traversal.walk.traverse`` from a median-degree entry and from the biggest hub:
   ``depends_on`` both ways, depth 4, ``max_expansions`` 200 (API.md defaults for the rest),
   ``--runs`` times each after a warm-up; p50 / p95 / mean, and what the walk found (edges
   expanded and read, nodes, paths, limits hit, frontier, SQL statements). Also the same walk
   with the largest budget (100,000 expansions, ``--exhaustive-runs`` times): what a
   visited-set walk costs when it is allowed to read most of the graph.
3. The recursive CTE of ``001_*`` (``WITH RECURSIVE`` over the edges both ways, a path array
   to refuse cycles, no visited set) from the same two starts at depths 2, 3 and 4, each run
   inside a transaction with ``SET LOCAL statement_timeout`` (``--timeout``, default 10 s):
   its median time and how many paths it enumerated, or "timeout"; and the ratio of the
   depth-4 CTE to the budgeted walk's p50.

    .venv/bin/python bench/traverse.py [--runs 50] [--exhaustive-runs 5] [--cte-runs 3]
        [--timeout 10] [--bank bench-traverse] [--entries 100000] [--edges 330000] [--explain]

Remove the bank with SQL (``DELETE FROM graph_edge WHERE bank_id = …``, then ``kb_entry``,
``graph_edgetype`` and ``kb_bank``): deleting through the ORM writes a history row per entry.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

RELATION = "depends_on"
ZIPF_SHARE = 0.3  # share of edge ends drawn by Zipf rank; the rest are uniform
ENTRY_COLUMNS = (
    "bank_id, kind_id, short_id, title, content, summary, useful_for, systems, tasks, metadata, "
    "status, status_changed_at, anchor_files, anchor_symbols, durable, retired_reason, "
    "retired_evidence, created_at, updated_at, verified_by, usage_count, created_by"
)
EDGE_COLUMNS = (
    "bank_id, from_entry_id, to_entry_id, type_id, label, note, evidence, source, actor, "
    "recorded_at, invalidated_reason"
)
# 001_*'s walk: every edge both ways, the path so far carried to refuse cycles, no visited set.
FULL_PATHS = """
WITH RECURSIVE edges AS (
    SELECT from_entry_id AS a, to_entry_id AS b FROM graph_edge
     WHERE bank_id = %(bank)s AND type_id = %(type)s AND invalidated_at IS NULL
    UNION ALL
    SELECT to_entry_id AS a, from_entry_id AS b FROM graph_edge
     WHERE bank_id = %(bank)s AND type_id = %(type)s AND invalidated_at IS NULL
),
walk AS (
    SELECT %(start)s::bigint AS node_id, 0 AS depth, ARRAY[%(start)s::bigint] AS path
    UNION ALL
    SELECT x.b, w.depth + 1, w.path || x.b
      FROM walk w JOIN edges x ON x.a = w.node_id
     WHERE w.depth < %(depth)s AND NOT (x.b = ANY(w.path))
)
SELECT count(*), count(DISTINCT node_id) FROM walk
"""


def zipf_ends(rng: np.random.Generator, count: int, ranking: np.ndarray) -> np.ndarray:
    """``count`` entry indexes: Zipf(1) over ``ranking`` with probability ZIPF_SHARE, else uniform."""
    n = len(ranking)
    weights = 1.0 / np.arange(1, n + 1)
    weights /= weights.sum()
    by_rank = ranking[rng.choice(n, count, p=weights)]
    uniform = rng.integers(0, n, count)
    return np.where(rng.random(count) < ZIPF_SHARE, by_rank, uniform)


def load(cursor, bank, n_entries: int, n_edges: int, rng: np.random.Generator) -> dict:
    """Empty ``bank`` and COPY the entries and the Zipf-shaped edges into it."""
    from django.utils import timezone

    from graph.models import EdgeType
    from kb.models import EntryKind

    kind_id = EntryKind.objects.get(bank=None, name="service").pk
    type_id = EdgeType.objects.get(bank=bank, name=RELATION).pk
    cursor.execute("DELETE FROM graph_edge WHERE bank_id = %s", [bank.pk])
    cursor.execute("DELETE FROM kb_entry WHERE bank_id = %s", [bank.pk])
    now = timezone.now()
    # Distinct 8-hex ids: multiplying by an odd constant is a bijection modulo 2**32.
    ids = (np.arange(n_entries, dtype=np.uint64) * 2246822519 + 977) % 2**32
    tail = ("live", now, [], [], True, "", "", now, now, "", 0, "bench")
    started = time.perf_counter()
    with cursor.copy(f"COPY kb_entry ({ENTRY_COLUMNS}) FROM STDIN") as copy:
        for i in tqdm(range(n_entries), desc="entries", unit="row", mininterval=1):
            title = f"Service {i:06d}"
            head = (bank.pk, kind_id, f"{int(ids[i]):08x}", title, f"About {title}.", "")
            copy.write_row((*head, "", [], [], "{}", *tail))
    entries_s = time.perf_counter() - started
    cursor.execute("SELECT id FROM kb_entry WHERE bank_id = %s ORDER BY id", [bank.pk])
    pks = np.array([row[0] for row in cursor.fetchall()], dtype=np.int64)
    ranking = rng.permutation(n_entries)
    draw = int(n_edges * 1.15)  # spare for duplicates and self-loops
    pairs = np.stack([zipf_ends(rng, draw, ranking), zipf_ends(rng, draw, ranking)], axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    _, first = np.unique(pairs, axis=0, return_index=True)
    pairs = pairs[np.sort(first)][:n_edges]
    started = time.perf_counter()
    with cursor.copy(f"COPY graph_edge ({EDGE_COLUMNS}) FROM STDIN") as copy:
        for a, b in tqdm(pairs, desc="edges", unit="row", mininterval=1):
            copy.write_row(
                (
                    bank.pk,
                    int(pks[a]),
                    int(pks[b]),
                    type_id,
                    "",
                    "",
                    "{}",
                    "import",
                    "bench",
                    now,
                    "",
                )
            )
    return {"entries": entries_s, "edges": time.perf_counter() - started, "edge_rows": len(pairs)}


def prepare(cursor, slug: str, n_entries: int, n_edges: int, rng: np.random.Generator):
    """The benchmark bank and its relation; loaded unless it already holds the graph."""
    from django.db import transaction

    from graph.models import EdgeType
    from kb.models import Bank

    bank = Bank.objects.get_or_create(slug=slug, defaults={"name": "Traversal benchmark"})[0]
    etype = EdgeType.objects.get_or_create(
        bank=bank, name=RELATION, defaults={"inverse": "dependency_of", "transitive": True}
    )[0]
    cursor.execute(
        # created_by 'bench': the Zipf graph's entries (bench/traverse_hub.py plants one more)
        "SELECT (SELECT count(*) FROM kb_entry WHERE bank_id = %(b)s AND created_by = 'bench'),"
        " (SELECT count(*) FROM graph_edge WHERE bank_id = %(b)s AND type_id = %(t)s)",
        {"b": bank.pk, "t": etype.pk},
    )
    entries, edges = cursor.fetchone()
    loaded = None
    if entries != n_entries or edges < n_edges * 0.95:
        print(f"loading {slug}: {n_entries:,} entries, ~{n_edges:,} edges…", flush=True)
        with transaction.atomic():
            loaded = load(cursor, bank, n_entries, n_edges, rng)
        print("  entries {entries:.1f}s, edges {edges:.1f}s".format(**loaded), flush=True)
        vacuum_s = timed(cursor.execute, "VACUUM (ANALYZE) kb_entry, graph_edge")
        print(f"  VACUUM ANALYZE {vacuum_s:.1f}s", flush=True)
    return bank, etype, loaded


def degrees(cursor, bank, etype) -> dict:
    """Degree statistics and the two starts: a median-degree entry and the biggest hub."""
    cursor.execute(
        """
        WITH ends AS (
            SELECT from_entry_id AS node FROM graph_edge WHERE bank_id = %(b)s AND type_id = %(t)s
            UNION ALL
            SELECT to_entry_id FROM graph_edge WHERE bank_id = %(b)s AND type_id = %(t)s
        )
        SELECT e.id, count(ends.node) AS degree
          FROM kb_entry e LEFT JOIN ends ON ends.node = e.id
         WHERE e.bank_id = %(b)s GROUP BY e.id ORDER BY e.id
        """,
        {"b": bank.pk, "t": etype.pk},
    )
    rows = np.array(cursor.fetchall(), dtype=np.int64)
    degree = rows[:, 1]
    median = int(np.median(degree))
    return {
        "median": median,
        "max": int(degree.max()),
        "p99": float(np.percentile(degree, 99)),
        "edges": int(degree.sum() // 2),
        "median_start": int(rows[np.argmax(degree == median), 0]),
        "hub_start": int(rows[np.argmax(degree), 0]),
    }


def timed(fn, *args, **kwargs) -> float:
    started = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - started


def stats(seconds: list[float]) -> dict[str, float]:
    ms = np.array(seconds) * 1000
    return {"p50": np.percentile(ms, 50), "p95": np.percentile(ms, 95), "mean": ms.mean()}


def bench_walk(bank, start, runs: int, max_expansions: int = 200) -> tuple[dict, dict]:
    """p50/p95 of the walk from ``start`` (depth 4, both ways), and what one walk found."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from graph.traversal.walk import Limits, Step, traverse

    step = Step((RELATION,), "both")
    limits = Limits(max_depth=4, max_expansions=max_expansions)
    traverse(bank, start, step, limits)  # warm-up
    samples = [
        timed(traverse, bank, start, step, limits)
        for _ in tqdm(range(runs), desc=f"walk, budget {max_expansions:,}", leave=False)
    ]
    with CaptureQueriesContext(connection) as ctx:
        result = traverse(bank, start, step, limits)
    body = result.as_json()
    found = {
        **{k: body["counts"][k] for k in ("expansions", "read", "nodes", "paths")},
        "truncated": body["truncated"],
        "limits_hit": body["limits_hit"],
        "frontier": len(body["frontier"]),
        "statements": len(ctx.captured_queries),
    }
    return stats(samples), found


def bench_full_paths(
    cursor, bank, etype, start: int, depth: int, runs: int, timeout_s: float
) -> dict:
    """The recursive CTE of 001_* from ``start``: median seconds and paths, or a timeout."""
    from django.db import transaction
    from django.db.utils import DatabaseError

    samples, paths, nodes = [], None, None
    for _ in range(runs):
        try:
            with transaction.atomic():
                cursor.execute(f"SET LOCAL statement_timeout = '{int(timeout_s * 1000)}ms'")
                started = time.perf_counter()
                cursor.execute(
                    FULL_PATHS, {"bank": bank.pk, "type": etype.pk, "start": start, "depth": depth}
                )
                paths, nodes = cursor.fetchone()
                samples.append(time.perf_counter() - started)
        except DatabaseError as exc:  # QueryCanceled: the statement timeout
            if "statement timeout" not in str(exc):
                raise
            return {"timeout": True}
    return {"timeout": False, "seconds": float(np.median(samples)), "paths": paths, "nodes": nodes}


def explain_hop(cursor, bank, start) -> None:
    """EXPLAIN ANALYZE of the first hop's statement of the walk from ``start`` (as sent)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from graph.traversal.walk import Limits, Step, traverse

    with CaptureQueriesContext(connection) as ctx:
        traverse(bank, start, Step((RELATION,), "both"), Limits(max_depth=4, max_expansions=200))
    hop = next(q["sql"] for q in ctx.captured_queries if 'FROM "graph_edge"' in q["sql"])
    cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + hop)
    print(f"\nEXPLAIN ANALYZE of the first hop from {start.short_id} (budget 200 → LIMIT 201):")
    for (line,) in cursor.fetchall():
        print("  " + line[:200])


def machine() -> str:
    cpu = re.search(r"model name\s*:\s*(.*)", Path("/proc/cpuinfo").read_text())
    mem_kib = int(Path("/proc/meminfo").read_text().split()[1])
    nproc = len(os.sched_getaffinity(0))
    return f"nproc {nproc}, {cpu[1] if cpu else '?'}, {mem_kib / 2**20:.1f} GiB RAM"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bank", default="bench-traverse")
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--edges", type=int, default=330_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--exhaustive-runs", type=int, default=5)
    parser.add_argument("--cte-runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per CTE statement")
    parser.add_argument(
        "--explain", action="store_true", help="EXPLAIN ANALYZE the hub's first hop"
    )
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.db import connection

    from kb.models import Entry

    rng, load_start = np.random.default_rng(20260404), os.getloadavg()[0]
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        pg = cursor.fetchone()[0].split(" on ")[0]
        bank, etype, loaded = prepare(cursor, args.bank, args.entries, args.edges, rng)
        shape = degrees(cursor, bank, etype)
        starts = {
            "median-degree entry": Entry.objects.get(pk=shape["median_start"]),
            "biggest hub": Entry.objects.get(pk=shape["hub_start"]),
        }
        walks, exhaustive, ctes = {}, {}, {}
        for label, start in starts.items():
            print(f"from the {label} ({start.short_id})…", flush=True)
            walks[label] = bench_walk(bank, start, args.runs)
            exhaustive[label] = bench_walk(bank, start, args.exhaustive_runs, 100_000)
            for depth in tqdm(CTE_DEPTHS, desc="recursive CTE", leave=False):
                ctes[label, depth] = bench_full_paths(
                    cursor, bank, etype, start.pk, depth, args.cte_runs, args.timeout
                )
        if args.explain:
            explain_hop(cursor, bank, starts["biggest hub"])
    load_end = os.getloadavg()[0]
    report(args, bank, shape, loaded, pg, walks, exhaustive, ctes, (load_start, load_end))


CTE_DEPTHS = (2, 3, 4)


def found_text(found: dict) -> str:
    cut = f"truncated {', '.join(found['limits_hit'])}" if found["truncated"] else "complete"
    return (
        f"{found['expansions']:,} expanded ({found['read']:,} read), {found['nodes']:,} nodes, "
        f"{found['paths']} paths; {cut}; frontier {found['frontier']:,}; "
        f"{found['statements']} statements"
    )


def cte_text(cte: dict, timeout: float) -> str:
    if cte["timeout"]:
        return f"timeout (> {timeout:g} s)"
    return f"{cte['seconds'] * 1000:,.1f} ms ({cte['paths']:,} paths, {cte['nodes']:,} nodes)"


def report(args, bank, shape, loaded, pg, walks, exhaustive, ctes, load) -> None:
    """The machine, the graph, and two markdown tables: the walks, and the recursive CTE."""
    print(
        f"\nMachine: {machine()}; 1-min load average {load[0]:.2f} at start, {load[1]:.2f} at end"
    )
    print(f"PostgreSQL: {pg}")
    if loaded:
        how = f"loaded now: COPY entries {loaded['entries']:.1f} s, edges {loaded['edges']:.1f} s"
    else:
        how = "reused"
    print(
        f"Graph: bank {bank.slug} ({how}); {args.entries:,} entries, {shape['edges']:,} "
        f"{RELATION} edges; degree median {shape['median']}, p99 {shape['p99']:.0f}, "
        f"max {shape['max']:,}\n"
    )
    print("| start | walk (budget 200) p50 / p95 / mean ms | what it found | exhaustive walk (budget 100,000) p50 ms | what it found |")  # fmt: skip
    print("|---|---|---|---|---|")
    for label, (timing, found) in walks.items():
        full_timing, full_found = exhaustive[label]
        cells = [
            label,
            f"{timing['p50']:.1f} / {timing['p95']:.1f} / {timing['mean']:.1f}",
            found_text(found),
            f"{full_timing['p50']:,.0f}",
            found_text(full_found),
        ]
        print("| " + " | ".join(cells) + " |")
    print(
        "\n| start | "
        + " | ".join(f"recursive CTE (001_*), depth {d}" for d in CTE_DEPTHS)
        + " | CTE depth 4 ÷ walk p50 |"
    )
    print("|---|" + "---|" * (len(CTE_DEPTHS) + 1))
    for label, (timing, _) in walks.items():
        deepest = ctes[label, CTE_DEPTHS[-1]]
        if deepest["timeout"]:
            ratio = f"> {args.timeout * 1000 / timing['p50']:,.0f}×"
        else:
            ratio = f"{deepest['seconds'] * 1000 / timing['p50']:,.1f}×"
        cells = [cte_text(ctes[label, d], args.timeout) for d in CTE_DEPTHS]
        print(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")
    print(
        "\nSummary: walk depth 4 (depends_on both ways, budget 200) p50 "
        + ", ".join(f"{t['p50']:.1f} ms from the {label}" for label, (t, _) in walks.items())
        + f"; {args.runs} runs each; recursive CTE statement_timeout {args.timeout:g} s, "
        f"median of {args.cte_runs} runs."
    )


if __name__ == "__main__":
    main()
