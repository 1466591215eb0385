"""Fold benchmark: what folding costs on top of a flat query, before and after in one run.

Reuses the 100k bank of ``bench/search.py`` (random unit vectors; loaded with COPY if missing,
no index needed here) and gives it about three current edges per entry (random ends, core
relation types, 40% with notes), plus two hubs of 1,000 and 20,000 edges. For each query
vector the flat pool is computed once (exact search), then the query service runs on that
fixed pool with ``fold: false`` and ``fold: true`` alternately, so the difference is the fold
alone: its two statements and the Python around them. Queries are five words and every
note is distinct, drawn from one vocabulary, so the note match runs. "before" is the query and fold modules
of git ``--before`` loaded side by side, the two taking turns query by query (default ``34d3d58``, the parent of issue 15's
query-aware neighbour selection; ``HEAD`` compares with the last commit); "after" is the
working tree. A hub run puts the hub at rank 1 of the pool. Needs a git checkout with history
(``git show`` of ``--before``). Besides the wall clock it reports the fold's CPU time, this
process's and the database backend's (``/proc/<pid>/schedstat``; 0 when the server is on
another machine): on a loaded box the wall clock mostly measures waiting for a core. The last
column is the CPU time of the whole folded query (its pool fixed, so without the search): the
overhead column subtracts a flat query that itself changed between revisions (since the third
round of issue 21 a flat query reads only its ``limit`` entries, and since the fifth in one
prepared statement), so both are shown.

    .venv/bin/python bench/fold.py [--size 100000] [--queries 150] [--before 34d3d58]

Below 20,001 entries the big hub gets every other entry (its label says the degree).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
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
# Notes and queries share one vocabulary, so the note match (full text, in the neighbour
# statement) really runs: every note is distinct (a lead and five drawn words) and every query
# is five drawn words (issue 21: a one-word query and one shared note never exercised it).
VOCABULARY = (
    "rotate credentials billing ledger deploy rollback canary invoice exporter payment gateway "
    "search indexer session store image resizer audit trail report scheduler shipping quote "
    "warehouse sync customer portal partner email relay feature flag metrics pipeline fraud "
    "scorer tax calculator pricing inventory cache returns label printer webhook receiver sso "
    "broker document store notification payroll export warehouse loader rate limiter backup"
).split()
NOTE_LEADS = (
    "Read this before relying on",
    "Explains the step that touches",
    "Needed when you change",
    "Background on",
)


def words(rng, n: int) -> str:
    return " ".join(rng.choice(VOCABULARY, n).tolist())


BEFORE_ISSUE_15 = "34d3d58"  # the fold before query-aware neighbour selection
HUBS = (1_000, 20_000)


def copy_edges(cursor, bank, pairs, rng) -> None:
    from django.utils import timezone

    cursor.execute("SELECT name, id FROM graph_edgetype WHERE bank_id IS NULL")
    type_ids = dict(cursor.fetchall())
    relations = np.array([type_ids[r] for r in RELATIONS])
    now = timezone.now()
    seen, rows = set(), []
    for s, d in pairs:
        t = int(rng.choice(relations))
        if s == d or (s, d, t) in seen:
            continue
        seen.add((s, d, t))
        note = f"{rng.choice(NOTE_LEADS)} the {words(rng, 5)}." if rng.random() < 0.4 else ""
        rows.append((bank.pk, s, d, t, "", note, "{}", "import", "bench", now, ""))
    columns = (
        "bank_id, from_entry_id, to_entry_id, type_id, label, note, evidence, source, actor,"
        " recorded_at, invalidated_reason"
    )
    with cursor.copy(f"COPY graph_edge ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def load_edges(cursor, bank, per_entry: float, rng) -> tuple[int, int, float | None]:
    """About ``per_entry`` edges per entry, plus hubs of 1k and 20k edges (reused if present)."""
    cursor.execute("SELECT id FROM kb_entry WHERE bank_id = %s ORDER BY id", [bank.pk])
    ids = np.array([row[0] for row in cursor.fetchall()])
    hub1k, hub20k = int(ids[11]), int(ids[22])
    degrees = [min(d, len(ids) - 1) for d in HUBS]
    want = int(len(ids) * per_entry) + sum(degrees)
    cursor.execute("SELECT count(*) FROM graph_edge WHERE bank_id = %s", [bank.pk])
    if cursor.fetchone()[0] >= want * 0.95:
        return hub1k, hub20k, None
    started = time.perf_counter()
    cursor.execute("DELETE FROM graph_edge WHERE bank_id = %s", [bank.pk])
    n = want - sum(degrees)
    pairs = list(zip(rng.choice(ids, n).tolist(), rng.choice(ids, n).tolist(), strict=True))
    for hub, degree in zip((hub1k, hub20k), degrees, strict=True):
        others = rng.choice(ids[ids != hub], degree, replace=False).tolist()
        half = degree // 2
        pairs += [(hub, o) for o in others[:half]] + [(o, hub) for o in others[half:]]
    copy_edges(cursor, bank, pairs, rng)
    cursor.execute("ANALYZE graph_edge")
    return hub1k, hub20k, time.perf_counter() - started


def legacy_modules(rev: str):
    """graph.services.fold and .query as they were at ``rev``, as separate modules (named after
    the revision, so several revisions load side by side)."""
    tag = "".join(c if c.isalnum() else "_" for c in rev)

    def load(path: str, name: str, replace: dict[str, str]) -> types.ModuleType:
        for where in (path, path.replace("graph/services/", "graph/retrieval/")):
            shown = subprocess.run(
                ["git", "-C", str(ROOT), "show", f"{rev}:{where}"], capture_output=True, text=True
            )
            if shown.returncode == 0:
                break
        else:
            sys.exit(f"bench/fold.py: git cannot show {path} at {rev!r}: {shown.stderr.strip()}")
        source = shown.stdout
        for a, b in replace.items():
            source = source.replace(a, b)
        module = types.ModuleType(name)
        sys.modules[name] = module
        exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)
        return module

    # Every retrieval module of that revision the query goes through, in import order, each
    # importing its predecessors of the same revision (their signatures changed with the query
    # action of issue 23 and the hop lines of issue 21).
    replace: dict[str, str] = {}
    for module in (
        "entries",
        "answer_types",
        "relevance",
        "fold",
        "answer",
        "budget",
        "presenter",
    ):
        paths = [f"graph/retrieval/{module}.py", f"graph/services/{module}.py"]
        for path in paths:
            known = subprocess.run(
                ["git", "-C", str(ROOT), "cat-file", "-e", f"{rev}:{path}"], capture_output=True
            )
            if known.returncode == 0:
                load(path, f"legacy_{tag}_{module}", replace)
                for package in ("graph.retrieval", "graph.services"):
                    replace[f"from {package}.{module} "] = f"from legacy_{tag}_{module} "
                break
    return load("graph/services/query.py", f"legacy_{tag}_query", replace)


def percentile(values, q):
    return float(np.percentile(np.array(values) * 1000, q))


def prepare_bank(args, rng):
    """The benchmark bank (entries and vectors loaded if missing), its edges and two hubs."""
    import search as search_bench
    from django.db import connection, transaction
    from pgvector.psycopg import register_vector

    from kb.models import Bank, EntryKind

    connection.ensure_connection()
    register_vector(connection.connection)
    kind_id = EntryKind.objects.get(bank=None, name="fact").pk
    n = args.size
    bank = Bank.objects.get_or_create(
        slug=f"{args.bank_prefix}-{n}", defaults={"name": f"Search benchmark, {n:,} entries"}
    )[0]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM kb_entryembedding WHERE bank_id = %s", [bank.pk])
        if cursor.fetchone()[0] != n:
            print(f"loading {bank.slug}…", flush=True)
            with transaction.atomic():
                search_bench.load_bank(cursor, bank, n, kind_id, rng)
            cursor.execute("VACUUM ANALYZE kb_entry, kb_entryembedding")
        hub1k, hub20k, seconds = load_edges(cursor, bank, args.edges_per_entry, rng)
        if seconds is not None:
            print(f"loaded edges in {seconds:.1f}s", flush=True)
        cursor.execute("SELECT count(*) FROM graph_edge WHERE bank_id = %s", [bank.pk])
        edges = cursor.fetchone()[0]
        degree = {}
        for hub in (hub1k, hub20k):
            cursor.execute(
                "SELECT count(*) FROM graph_edge WHERE from_entry_id = %s OR to_entry_id = %s",
                [hub, hub],
            )
            degree[hub] = cursor.fetchone()[0]
    hubs = [("no hub", None)] + [(f"hub {degree[h]:,} edges", h) for h in (hub1k, hub20k)]
    return bank, edges, hubs


def flat_pools(bank, queries: int, rng) -> list:
    """(query vector, five-word question, its flat pool of 20) per query, computed once."""
    import search as search_bench

    from kb.services.search import rank_candidates

    print(f"computing {queries} flat pools (exact search)…", flush=True)
    pools = []
    for _ in range(queries):
        vector = search_bench.unit_vectors(rng, 1)[0].tolist()
        text = f"how do I {words(rng, 5)}"
        hits = rank_candidates(bank, text, limit=20, query_vector=vector, lexical=False)
        pools.append((vector, text, hits))
    return pools


class CpuClock:
    """CPU time spent on a query, apart from the wall clock: this thread's, and the database
    backend's (``/proc/<pid>/schedstat``, when the server runs on this machine). On a loaded
    box the wall clock mostly measures waiting for a core; CPU time measures the work."""

    def __init__(self):
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            self.path = Path(f"/proc/{cursor.fetchone()[0]}/schedstat")
        self.server_known = self.path.exists()

    def now(self) -> tuple[float, float]:
        server = int(self.path.read_text().split()[0]) / 1e9 if self.server_known else 0.0
        return time.thread_time(), server


def time_one(module, bank, text, vector, hits, flat_first: bool, clock) -> tuple[dict, dict]:
    """One question through one code version, fold off and on, on a fixed pool: wall time,
    client CPU and server CPU per mode."""
    # The ranking is fixed: older versions call rank_candidates, newer ones rank_and_embed
    # (the ranking and the query's vector, given here).
    name = "rank_and_embed" if hasattr(module, "rank_and_embed") else "rank_candidates"
    saved = getattr(module, name)
    if name == "rank_and_embed":
        setattr(module, name, lambda *a, **k: (list(hits), k.get("query_vector") or vector))
    else:
        setattr(module, name, lambda *a, **k: list(hits))
    timing, stats = {}, {}
    try:
        for mode in (False, True) if flat_first else (True, False):
            cpu = clock.now()
            started = time.perf_counter()
            body = module.run_query(
                bank, module.QueryParams(text, fold=mode), record=False, query_vector=vector
            )
            wall = time.perf_counter() - started
            client, server = (b - a for a, b in zip(cpu, clock.now(), strict=True))
            timing[mode] = (wall, client, server)
            if mode:
                stats = body["stats"]
    finally:
        setattr(module, name, saved)
    return timing, stats


def time_versions(bank, pools, hub, versions) -> dict:
    """Every version takes its turn query by query (the order rotating), so a drift in the
    machine's speed (±20 % between runs on this box) weighs on all alike."""
    timings = {label: ([], [], [], [], [], None) for label, _ in versions}
    clock = CpuClock()
    for i, (vector, text, hits) in enumerate(pools):
        hits = list(hits)
        if hub is not None:
            first = type(hits[0])(hub, hits[0].score + 1, 0.9, 0.9, None, ["vector"], 1)
            hits = [first] + [h for h in hits if h.entry_id != hub][:19]
        shift = i % len(versions)
        for label, module in versions[shift:] + versions[:shift]:
            timing, stats = time_one(module, bank, text, vector, hits, bool(i % 2), clock)
            flat, fold, overhead, cpu, fold_cpu, _ = timings[label]
            if i >= 5:  # warm-up: prepared statements, caches
                flat.append(timing[False][0])
                fold.append(timing[True][0])
                overhead.append(timing[True][0] - timing[False][0])
                cpu.append([on - off for on, off in zip(timing[True], timing[False], strict=True)])
                fold_cpu.append(timing[True])
            timings[label] = (flat, fold, overhead, cpu, fold_cpu, stats)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--edges-per-entry", type=float, default=3.0)
    parser.add_argument(
        "--before", default=BEFORE_ISSUE_15, help="git revision(s), comma-separated"
    )
    parser.add_argument("--bank-prefix", default="bench-search")
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import search as search_bench

    from graph.retrieval import query as new_query

    rng = np.random.default_rng(42)
    revisions = [r.strip() for r in args.before.split(",") if r.strip()]
    versions = [(f"git {r}", legacy_modules(r)) for r in revisions] + [("after", new_query)]
    bank, edges, hubs = prepare_bank(args, rng)
    pools = flat_pools(bank, args.queries, rng)
    rows = []
    for label, hub in hubs:
        timings = time_versions(bank, pools, hub, versions)
        rows += [(label, version, *timings[version]) for version, _ in versions]
    print(f"\nMachine: {search_bench.machine()}; load average {os.getloadavg()}")
    print(f"before = {', '.join('git ' + r for r in revisions)}, after = the working tree")
    print(f"Bank: {args.size:,} entries, {edges:,} current edges; pool 20, limit 8, neighbors 3\n")
    print(
        "| results include | code | flat p50 / p95 (ms) | fold p50 / p95 (ms) "
        "| fold overhead p50 / p95 (ms) | fold overhead CPU, client + server = total, mean (ms) "
        "| folded query CPU, client + server = total, mean (ms) |"
    )
    print("|---|---|---|---|---|---|---|")
    for label, version, flat, fold, overhead, cpu, fold_cpu, _ in rows:
        client, server = (float(np.mean([c[k] for c in cpu]) * 1000) for k in (1, 2))
        whole = [float(np.mean([c[k] for c in fold_cpu]) * 1000) for k in (1, 2)]
        print(
            f"| {label} | {version} | {percentile(flat, 50):.2f} / {percentile(flat, 95):.2f} "
            f"| {percentile(fold, 50):.2f} / {percentile(fold, 95):.2f} "
            f"| {percentile(overhead, 50):.2f} / {percentile(overhead, 95):.2f} "
            f"| {client:.2f} + {server:.2f} = {client + server:.2f} "
            f"| {whole[0]:.2f} + {whole[1]:.2f} = {sum(whole):.2f} |"
        )
    print("\nLast fold stats (after):", {r[0]: r[7] for r in rows if r[1] == "after"})


if __name__ == "__main__":
    main()
