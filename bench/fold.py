"""Fold benchmark: what folding costs on top of a flat query, measured in the same run.

Reuses the banks of ``bench/search.py`` (10k and 100k entries with random unit vectors; loaded
if missing) and gives each about three current edges per entry (random ends, core relation
types, 40% with notes), loaded with COPY: a benchmark bank needs no audit rows. Then for each
query (a random unit vector, so no model in the loop) it runs the query service with
``fold: false`` and ``fold: true`` alternately, without usage bumps or logging, and prints
p50/p95 of both, the per-query overhead and the ratio.

    .venv/bin/python bench/fold.py [--sizes 10000,100000] [--queries 200] [--edges-per-entry 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

RELATIONS = [
    "see_also",
    "cites",
    "part_of",
    "corrects",
    "clarifies",
    "supersedes",
    "derived_from",
    "requires",
]


def load_edges(cursor, bank, per_entry: float, rng: np.random.Generator) -> float | None:
    """Give ``bank`` about ``per_entry`` current edges per entry (reused when present)."""
    from django.utils import timezone

    cursor.execute("SELECT id FROM kb_entry WHERE bank_id = %s ORDER BY id", [bank.pk])
    ids = np.array([row[0] for row in cursor.fetchall()])
    want = int(len(ids) * per_entry)
    cursor.execute("SELECT count(*) FROM graph_edge WHERE bank_id = %s", [bank.pk])
    if cursor.fetchone()[0] >= want * 0.95:
        return None
    cursor.execute("DELETE FROM graph_edge WHERE bank_id = %s", [bank.pk])
    cursor.execute("SELECT name, id FROM graph_edgetype WHERE bank_id IS NULL")
    type_ids = dict(cursor.fetchall())
    relations = np.array([type_ids[r] for r in RELATIONS])
    src = rng.choice(ids, want)
    dst = rng.choice(ids, want)
    typ = rng.choice(relations, want)
    seen, rows = set(), []
    now = timezone.now()
    for s, d, t in zip(src.tolist(), dst.tolist(), typ.tolist(), strict=True):
        if s == d or (s, d, t) in seen:
            continue
        seen.add((s, d, t))
        note = (
            "Read this before relying on the other entry's numbers." if rng.random() < 0.4 else ""
        )
        rows.append((bank.pk, s, d, t, "", note, "{}", "import", "bench", now))
    started = time.perf_counter()
    columns = "bank_id, from_entry_id, to_entry_id, type_id, label, note, evidence, source, actor, recorded_at"
    with cursor.copy(f"COPY graph_edge ({columns}, invalidated_reason) FROM STDIN") as copy:
        for row in rows:
            copy.write_row((*row, ""))
    cursor.execute("ANALYZE graph_edge")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--edges-per-entry", type=float, default=3.0)
    parser.add_argument("--bank-prefix", default="bench-search")
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import search as search_bench
    from django.db import connection

    from graph.retrieval.query import QueryParams, run_query

    rng = np.random.default_rng(42)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with connection.cursor() as cursor:
        banks, _, _ = search_bench.prepare(cursor, sizes, args.bank_prefix, rng)
        for n in sizes:
            seconds = load_edges(cursor, banks[n], args.edges_per_entry, rng)
            if seconds is not None:
                print(f"loaded edges for {banks[n].slug} in {seconds:.1f}s", flush=True)
            cursor.execute("SELECT count(*) FROM graph_edge WHERE bank_id = %s", [banks[n].pk])
            edges = cursor.fetchone()[0]
            flat, fold, overhead = [], [], []
            for i in range(args.queries + 10):
                vector = search_bench.unit_vectors(rng, 1)[0].tolist()
                timings = {}
                for mode in (False, True) if i % 2 else (True, False):
                    started = time.perf_counter()
                    body = run_query(
                        banks[n], QueryParams("bench", fold=mode), record=False, query_vector=vector
                    )
                    timings[mode] = time.perf_counter() - started
                    if mode:
                        last_stats = body["stats"]
                if i >= 10:  # warm-up
                    flat.append(timings[False])
                    fold.append(timings[True])
                    overhead.append(timings[True] - timings[False])
            rows.append(
                (
                    n,
                    edges,
                    search_bench.stats(flat),
                    search_bench.stats(fold),
                    search_bench.stats(overhead),
                    last_stats,
                )
            )
    print(f"\nMachine: {search_bench.machine()}\n")
    print(
        "| entries | edges | flat p50 / p95 (ms) | fold p50 / p95 (ms) | overhead p50 / p95 (ms) | fold ÷ flat (p50) |"
    )
    print("|---|---|---|---|---|---|")
    for n, edges, f, g, o, _ in rows:
        print(
            f"| {n:,} | {edges:,} | {f['p50']:.2f} / {f['p95']:.2f} | {g['p50']:.2f} / {g['p95']:.2f} "
            f"| {o['p50']:.2f} / {o['p95']:.2f} | {g['p50'] / f['p50']:.2f}× |"
        )
    print("\nLast fold stats per size:", {n: s for n, *_, s in rows})


if __name__ == "__main__":
    main()
