"""End-to-end ``POST /api/v1/banks/{bank}/query`` (issue 12 item 4): token check, rate-limit
count, query embedding (real MiniLM), search, fold, usage and the query log, through the whole
Django/DRF stack in-process (middleware, authentication, throttling, parsing, JSON rendering;
APIClient, no socket), fold on. Prints p50/p95 for new questions (embedding computed) and
repeated ones (embedding cache), the model's cost alone on the same kind of text, where
the time goes per SQL statement, and the CPU each query costs in this process and in its
database backend (``/proc/<pid>/schedstat``): on a loaded box the wall-clock figures move with
the load, the CPU figures much less; on a quiet box their sum is about the latency.

The bank (``bench-e2e-<size>``, reused when already loaded, so a rerun takes minutes): ``--size``
entries whose content vectors are real MiniLM embeddings of Debian package descriptions
replicated with noise (see bench/bank_vectors.py; the other two dimensions are left empty so
one index per bank has to be built), about three current edges per entry (40% with notes), and
the bank's own HNSW indexes when the app would build them (``KB_BANK_VECTOR_INDEX_AT``; smaller
banks are scanned exactly, as in the app). ``--bank SLUG`` measures an existing bank as it is
(e.g. ``bench-search-100000`` of bench/search.py and bench/fold.py). The questions are other
Debian descriptions, never seen by the cache before.

To compare with older code, run this file from an export of that commit against the same
database (``DATABASE_URL``); the bank is reused.

    .venv/bin/python bench/query_e2e.py [--size 100000] [--queries 120] [--bank SLUG]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def load(cursor, bank, base: np.ndarray, n: int, kind_id: int, rng) -> None:
    import bank_vectors
    import fold as fold_bench
    import search as search_bench
    from django.utils import timezone

    cursor.execute("DELETE FROM graph_edge WHERE bank_id = %s", [bank.pk])
    cursor.execute("DELETE FROM kb_entryembedding WHERE bank_id = %s", [bank.pk])
    cursor.execute("DELETE FROM kb_entry WHERE bank_id = %s", [bank.pk])
    now = timezone.now()
    titles = search_bench.texts(rng, n, 4, 9)
    contents = search_bench.texts(rng, n, 30, 90)
    tail = ("live", now, [], [], True, "", "", now, now, "", 0, "bench")
    with cursor.copy(f"COPY kb_entry ({search_bench.ENTRY_COLUMNS}) FROM STDIN") as copy:
        for i in range(n):
            short = f"{(i * 2654435761 + 777 + bank.pk * 7919) % 2**32:08x}"
            row = (bank.pk, kind_id, short, titles[i].capitalize(), contents[i], "", "")
            copy.write_row((*row, [], [], "{}", *tail))
    cursor.execute("SELECT id FROM kb_entry WHERE bank_id = %s ORDER BY id", [bank.pk])
    ids = [row[0] for row in cursor.fetchall()]
    content = bank_vectors.bank_vectors(base, n, 0.02, 1)
    with cursor.copy(search_bench.EMBEDDING_COPY) as copy:
        copy.set_types(
            ["int8", "int8", "vector", "vector", "vector", "varchar", "varchar", "timestamptz"]
        )
        for i, entry_id in enumerate(ids):
            copy.write_row((entry_id, bank.pk, content[i], None, None, "minilm-perturbed", "", now))
    pairs = list(zip(rng.choice(ids, 3 * n).tolist(), rng.choice(ids, 3 * n).tolist(), strict=True))
    fold_bench.copy_edges(cursor, bank, pairs, rng)


def counts(cursor, bank_id: int) -> tuple[int, int, int]:
    out = []
    for table in ("kb_entry", "kb_entryembedding", "graph_edge"):
        cursor.execute(f"SELECT count(*) FROM {table} WHERE bank_id = %s", [bank_id])
        out.append(cursor.fetchone()[0])
    return tuple(out)


def percentiles(seconds) -> tuple[float, float]:
    ms = np.array(seconds) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def label(sql: str) -> str:
    s = " ".join(sql.split())
    if "WITH vc AS" in s:
        return "search (rank_candidates)"
    if "WITH ft AS" in s:
        return "search: lexical arm (sent before the model)"
    if "WITH qv AS" in s:
        return "fold: neighbours"
    if "FROM graph_edge ed JOIN graph_edgetype" in s:
        return "fold: edges among the pool"
    if "graph_querylog" in s:
        return "usage + query log" if "UPDATE" in s else f"{s.split()[0]} graph_querylog"
    if "kb_tokenratewindow" in s:
        return "token + bank + rate count" if "kb_bank" in s else "rate-limit count"
    if "kb_agenttoken_banks" in s:
        return "token + its bank" if '"kb_agenttoken"."token_hash"' in s else "token holds bank"
    for word in ("kb_agenttoken", "kb_bank", "kb_entry"):
        if f'FROM "{word}"' in s or f'UPDATE "{word}"' in s or f"FROM {word}" in s:
            return f"{s.split()[0]} {word}"
    return s[:48]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=120)
    parser.add_argument("--bank", default="", help="Measure an existing bank as it is.")
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=int(os.environ.get("KB_TORCH_THREADS") or 1),
        help="Threads of the model (default 1, as config/gunicorn.conf.py gives each web process).",
    )
    parser.add_argument(
        "--raw",
        default="",
        help="Also write the first runtime's timings (ms per query) as JSON to this file "
        "(bench/query_e2e_ab.py pools them over rounds).",
    )
    parser.add_argument(
        "--runtimes",
        default="onnx,torch",
        help="Model runtimes measured side by side (KB_EMBEDDING_RUNTIME), new questions each.",
    )
    return parser.parse_args()


def setup(args: argparse.Namespace) -> None:
    os.environ["OMP_NUM_THREADS"] = str(args.torch_threads)  # before torch is imported
    os.environ["KB_ONNX_THREADS"] = str(args.torch_threads)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import logging

    logging.getLogger("config.serving.request").setLevel(logging.WARNING)  # one line a request
    from django.conf import settings

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    if settings.KB_RATE_LIMIT_PER_MINUTE:  # still counted (one statement), never refused here
        settings.KB_RATE_LIMIT_PER_MINUTE = 10**9


def prepare_bank(args: argparse.Namespace, base: np.ndarray, rng):
    """The bench bank, loaded when missing, with its own vector indexes; returns (bank,
    (entries, vectors, edges), index report)."""
    from django.db import connection, transaction
    from pgvector.psycopg import register_vector

    from kb.models import Bank, EntryKind
    from kb.services.vector_index import ensure_bank_vector_indexes

    connection.ensure_connection()
    register_vector(connection.connection)
    kind_id = EntryKind.objects.get(bank=None, name="fact").pk
    if args.bank:
        bank = Bank.objects.get(slug=args.bank)
    else:
        bank = Bank.objects.get_or_create(
            slug=f"bench-e2e-{args.size}", defaults={"name": f"E2E query bench {args.size:,}"}
        )[0]
    with connection.cursor() as cursor:
        sizes = counts(cursor, bank.pk)
        if not args.bank and sizes[:2] != (args.size, args.size):
            started = time.perf_counter()
            with transaction.atomic():
                load(cursor, bank, base, args.size, kind_id, rng)
            cursor.execute("VACUUM ANALYZE kb_entry, kb_entryembedding, graph_edge")
            print(f"loaded in {time.perf_counter() - started:.1f}s", flush=True)
            sizes = counts(cursor, bank.pk)
        cursor.execute("SET maintenance_work_mem = '512MB'")
    report = ensure_bank_vector_indexes(bank, concurrently=False)
    if report.created:
        print(f"built {', '.join(report.created)} in {report.seconds:.1f}s", flush=True)
    return bank, sizes, report


def query_runner(bank):
    """``run(texts)``: POST each as a hybrid query; (seconds, per-statement times, statement
    counts, SQL seconds) per query."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from rest_framework.test import APIClient

    from kb.services.tokens import create_token

    _, raw = create_token("bench-e2e", [bank], "read")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    url = f"/api/v1/banks/{bank.slug}/query"

    def run(batch):
        seconds, per_statement, statements, sql = [], defaultdict(list), [], []
        for text in batch:
            with CaptureQueriesContext(connection) as ctx:
                started, cpu = time.perf_counter(), time.process_time()
                db = backend_cpu()
                response = client.post(url, {"query": text, "lexical": True}, format="json")
                seconds.append(time.perf_counter() - started)
                run.cpu.append((time.process_time() - cpu, backend_cpu() - db))
            assert response.status_code == 200, response.content[:300]
            statements.append(len(ctx.captured_queries))
            sql.append(sum(float(q["time"]) for q in ctx.captured_queries))
            for q in ctx.captured_queries:
                per_statement[label(q["sql"])].append(float(q["time"]))
        return seconds, per_statement, statements, sql

    run.cpu = []  # (this process's CPU s, the database backend's CPU s) per query
    return run


def backend_cpu() -> float:
    """CPU seconds the connection's server process has run (``/proc/<pid>/schedstat``, in ns;
    0.0 when the server is not on this machine). With this process's CPU it is what a query
    costs whatever else runs on the box: on a quiet one, about its latency."""
    from django.db import connection

    pid = getattr(backend_cpu, "pid", None)
    if pid is None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = backend_cpu.pid = cursor.fetchone()[0]
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
    except OSError:
        return 0.0


def time_embedding(embedder, text: str, into: list[float]) -> None:
    """The model alone on one new text, as a query pays it: the embedder's query path (the int8
    variant when ``KB_ONNX_QUERY_INT8`` is on), no cache."""
    one = getattr(embedder, "embed_query_text", None) or (lambda t: embedder.embed([t])[0])
    started = time.perf_counter()
    one(text)
    into.append(time.perf_counter() - started)


def alternate(run, runtimes: list[str], texts: dict[str, list[str]], q: int) -> dict:
    """Query by query, the runtimes take turns (each on new questions: the query-vector cache
    must not serve them), so load from other processes and the warming of the bank's pages hit
    them alike. Returns per runtime (embedder, new-question s, model s, long-text s,
    per-statement times, statement counts)."""
    from django.conf import settings

    from kb.services import embedding as embedding_service
    from kb.services.embedding import get_embedder

    embedders = {}
    for runtime in runtimes:  # load each runtime once; get_embedder() keeps one per runtime
        settings.KB_EMBEDDING_RUNTIME = runtime
        embedders[runtime] = get_embedder()
        run(texts["warm"][:3])  # model load, connection, first plans
    embedding_service._QUERY_CACHE.clear()
    timings = {r: (embedders[r], [], [], [], defaultdict(list), []) for r in runtimes}
    run.cpu.clear()
    per_runtime = max(1, q // len(runtimes))
    for i in range(per_runtime * len(runtimes)):
        runtime = runtimes[i % len(runtimes)]
        settings.KB_EMBEDDING_RUNTIME = runtime
        embedder, new_s, embed_s, long_s, per_st, statements = timings[runtime]
        seconds, stmts, counts_, _ = run([texts["questions"][i]])
        if runtime != runtimes[0]:
            run.cpu.pop()  # CPU is reported for the first runtime
        new_s += seconds
        statements += counts_
        for key, values in stmts.items():
            per_st[key] += values
        time_embedding(embedder, texts["model"][i], embed_s)
        if i < len(texts["long"]) * len(runtimes):
            time_embedding(embedder, texts["long"][i // len(runtimes)], long_s)
    return timings


def print_report(bank, sizes, report, timings, repeat, load_after) -> None:
    import search as search_bench

    first = next(iter(timings.values()))
    embedder, new_s, _, _, per_statement, statements = first
    repeat_s, repeat_sql = repeat
    print(f"\nMachine: {search_bench.machine()}; load average {os.getloadavg()[0]:.2f}")
    print(
        f"Bank {bank.slug}: {sizes[0]:,} entries, {sizes[1]:,} vectors, {sizes[2]:,} edges;"
        f" own HNSW indexes: {', '.join(report.present + report.created) or 'none (exact scan)'}"
    )
    print(
        f"fold on (pool 20, limit 8, neighbours 3); statements per query: "
        f"{min(statements)}–{max(statements)} (median {int(np.median(statements))});"
        f" embedder {embedder.name}\n"
    )
    print("| POST /query (hybrid, fold on) | runtime | p50 (ms) | p95 (ms) | load (1/5/15 min) |")
    print("|---|---|---|---|---|")
    loads = "/".join(f"{x:.1f}" for x in load_after)
    for runtime, (used, new, embed_s, long_s, _, _) in timings.items():
        used = getattr(used, "runtime", "") or runtime
        for name, s in (
            (f"new question (embedding computed), {len(new)}", new),
            (f"the model alone (embed one new text), {len(embed_s)}", embed_s),
            (f"the model alone, a ~250-word-piece question, {len(long_s)}", long_s),
        ):
            p50, p95 = percentiles(s)
            print(f"| {name} | {used} | {p50:.1f} | {p95:.1f} | {loads} |")
    p50, p95 = percentiles(repeat_s)
    print(
        f"| repeated question (embedding cached), {len(repeat_s)} | — | {p50:.1f} | {p95:.1f} | |"
    )
    print(
        f"\nrepeated question: its SQL statements take p50 {percentiles(repeat_sql)[0]:.1f} ms"
        f" of the {percentiles(repeat_s)[0]:.1f} ms"
    )
    print("\n| statement (new questions) | per query | p50 (ms) | p95 (ms) |")
    print("|---|---|---|---|")
    for name, times in sorted(per_statement.items(), key=lambda kv: -np.percentile(kv[1], 50)):
        p50, p95 = percentiles(times)
        print(f"| {name} | {len(times) / len(new_s):.1f} | {p50:.2f} | {p95:.2f} |")


def print_cpu(runtime: str, new: list, repeated: list) -> None:
    """CPU per query (this process + the database backend): the figure load does not move."""
    print(
        f"\n| CPU per query ({runtime}) | this process p50 (ms) | database p50 (ms) | sum p50 / p95 (ms) |"
    )
    print("|---|---|---|---|")
    for name, pairs in (("new question", new), ("repeated question", repeated)):
        if not pairs:
            continue
        app, db = (percentiles([p[i] for p in pairs])[0] for i in (0, 1))
        p50, p95 = percentiles([a + b for a, b in pairs])
        print(f"| {name}, {len(pairs)} | {app:.1f} | {db:.1f} | {p50:.1f} / {p95:.1f} |")


def main() -> None:
    args = parse_args()
    setup(args)
    import bank_vectors
    from django.conf import settings

    rng = np.random.default_rng(9)
    base, _ = bank_vectors.real_vectors(4000, 200)
    q = args.queries
    pool = bank_vectors.descriptions(4000 + 200 + 2 * q + 120 + 10)[4200:]
    texts = {
        "questions": pool[:q],
        "model": pool[q : 2 * q],
        "warm": pool[-10:],
        # Long questions (about 250 word pieces each; the model reads at most 256).
        "long": [" ".join(pool[2 * q + i : 2 * q + i + 12]) for i in range(0, 120, 12)],
    }
    bank, sizes, report = prepare_bank(args, base, rng)
    run = query_runner(bank)
    runtimes = [r.strip() for r in args.runtimes.split(",") if r.strip()]
    timings = alternate(run, runtimes, texts, q)
    load_after = os.getloadavg()
    settings.KB_EMBEDDING_RUNTIME = runtimes[0]
    cpu_new = list(run.cpu)
    run.cpu.clear()
    repeat_s, _, _, repeat_sql = run(texts["questions"][: max(1, q // len(runtimes) // 2)])
    print_report(bank, sizes, report, timings, (repeat_s, repeat_sql), load_after)
    print_cpu(runtimes[0], cpu_new, run.cpu)
    if args.raw:
        _, new_s, embed_s, _, per_statement, _ = timings[runtimes[0]]
        ms = lambda values: [v * 1000 for v in values]  # noqa: E731
        raw = {
            "new": ms(new_s),
            "model": ms(embed_s),
            "repeated": ms(repeat_s),
            "repeated_sql": ms(repeat_sql),
            "statements": {k: ms(v) for k, v in per_statement.items()},
            "load": list(load_after),
            "cpu_new": ms([a + b for a, b in cpu_new]),
            "cpu_new_app": ms([a for a, _ in cpu_new]),
            "cpu_new_db": ms([b for _, b in cpu_new]),
            "cpu_repeated": ms([a + b for a, b in run.cpu]),
        }
        Path(args.raw).write_text(json.dumps(raw))


if __name__ == "__main__":
    main()
