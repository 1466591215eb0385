"""Graph analytics on a bank with hubs: PPR latency with and without budgets, communities,
statistics.

The bank ``bench-analytics-<N>`` (``--entries``, default 20,000) is a preferential-attachment
graph (Barabási–Albert, m=3, seed 11: a heavy-tailed degree distribution) plus ``--hubs``
(default 3) giant hubs linked to a quarter of the bank each, the shape that makes a naive k-hop
walk return the whole bank. Entries and edges are written with ``bulk_create`` (no operation,
no history: a benchmark bank needs neither); an existing bank of the right size is reused.

Measured (query vectors not involved: seeds are given, so the model is not in the loop):

1. PPR around random seeds and around a hub, hops 1–3, with the default budgets
   (``max_nodes`` 5000, 200 edges per entry and direction) and with the budgets lifted:
   median and p95 latency, subgraph nodes and edges, and whether the answer was truncated.
2. ``build_communities``: Louvain over every current edge, summaries and (hashing) vectors.
3. ``graph_stats`` with reach from a hub.

    .venv/bin/python bench/analytics.py [--entries 20000] [--hubs 3] [--runs 20]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def build_bank(n: int, hubs: int):
    import networkx as nx
    from django.db import transaction

    from graph.edges.vocab import edge_types_for_bank
    from graph.models import Edge
    from kb.models import Entry, EntryKind
    from kb.services.banks import ensure_bank

    bank, _ = ensure_bank(f"bench-analytics-{n}")
    if Entry.objects.filter(bank=bank).count() == n + hubs:
        return bank, False
    Edge.objects.filter(bank=bank).delete()
    Entry.objects.filter(bank=bank).delete()
    graph = nx.barabasi_albert_graph(n, 3, seed=11)
    rng = random.Random(11)
    kind = EntryKind.objects.get(bank=None, name="fact")
    types = edge_types_for_bank(bank)
    relations = [types[r] for r in ("see_also", "cites", "part_of", "corrects", "requires")]
    with transaction.atomic():
        entries = Entry.objects.bulk_create(
            [Entry(bank=bank, kind=kind, short_id=f"{i:08x}", title=f"Node {i}") for i in range(n)]
            + [
                Entry(bank=bank, kind=kind, short_id=f"{n + h:08x}", title=f"Hub {h}")
                for h in range(hubs)
            ],
            batch_size=5000,
        )
        pairs = [(a, b) for a, b in graph.edges()]
        for h in range(hubs):
            pairs += [(n + h, i) for i in rng.sample(range(n), n // 4)]
        Edge.objects.bulk_create(
            [
                Edge(
                    bank=bank,
                    from_entry=entries[a],
                    to_entry=entries[b],
                    type=rng.choice(relations),
                    note="" if rng.random() < 0.8 else "How the other entry pertains.",
                )
                for a, b in pairs
            ],
            batch_size=5000,
        )
    return bank, True


def timed(fn, runs: int):
    times, last = [], None
    for _ in range(runs):
        t = time.perf_counter()
        last = fn()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--hubs", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    os.environ["KB_EMBEDDER"] = "hashing"  # community vectors only; retrieval is not measured
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from graph.analytics.communities import build_communities
    from graph.analytics.stats import graph_stats
    from graph.models import Edge
    from graph.retrieval.ppr import ppr
    from kb.models import Entry

    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    t = time.perf_counter()
    bank, fresh = build_bank(args.entries, args.hubs)
    from django.db import connection

    with connection.cursor() as cursor:  # fresh bulk loads leave the planner's statistics stale
        cursor.execute("ANALYZE kb_entry; ANALYZE graph_edge")
    edges = Edge.objects.filter(bank=bank).count()
    print(
        f"bank {bank.slug}: {args.entries + args.hubs} entries, {edges} edges "
        + (f"(built in {time.perf_counter() - t:.1f}s)" if fresh else "(reused)")
    )
    rng = random.Random(5)
    ids = list(Entry.objects.filter(bank=bank).values_list("pk", flat=True))
    hub = Entry.objects.get(bank=bank, title="Hub 0")
    rows = [("case", "hops", "budgets", "median ms", "p95 ms", "nodes", "edges", "truncated")]
    for label, seeds in (("random seeds", None), ("seeded at a hub", [hub])):
        for hops in (1, 2, 3):
            for budgets, opts in (
                ("default", {}),
                ("lifted", {"max_nodes": 100_000, "per_node": 1_000_000}),
            ):
                if budgets == "lifted" and hops == 3:
                    continue  # the whole bank: the point is made at two hops
                picks = seeds or Entry.objects.filter(pk__in=rng.sample(ids, 5))

                def run(picks=picks, hops=hops, opts=opts):
                    return ppr(bank, "", seed_entries=list(picks), hops=hops, limit=20, **opts)

                median, p95, result = timed(run, args.runs if budgets == "default" else 3)
                sub = result.subgraph
                rows.append(
                    (
                        label,
                        str(hops),
                        budgets,
                        f"{median:.1f}",
                        f"{p95:.1f}",
                        str(len(sub.nodes)),
                        str(len(sub.edges)),
                        ",".join(sub.limits_hit) or "no",
                    )
                )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print()
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)))

    t = time.perf_counter()
    built = build_communities(bank)
    print(
        f"\nbuild_communities: {built.communities} communities, {built.members} members over "
        f"{built.nodes} nodes / {built.edges} edges in {time.perf_counter() - t:.1f}s"
    )
    median, p95, stats = timed(lambda: graph_stats(bank, reach_from=hub), 3)
    reach = ", ".join(f"d{r['depth']} {r['share']:.0%}" for r in stats.reach["depths"])
    print(
        f"graph_stats (reach from a hub): median {median:.0f} ms; degree median "
        f"{stats.degree['median']}, p99 {stats.degree['p99']}, max {stats.degree['max']}; "
        f"reach {reach}"
    )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
