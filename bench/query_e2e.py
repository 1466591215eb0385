"""End-to-end ``POST /api/v1/banks/{bank}/query`` (issue 12 item 4): token check, query
embedding (real MiniLM), search, fold, usage and the query log, through the whole Django/DRF
stack in-process (APIClient, no socket), at 100k entries with fold on. Prints p50/p95 for new
questions (embedding computed) and repeated ones (embedding cache), and where the time goes
per SQL statement.

The bank: 100k entries whose content vectors are real MiniLM embeddings of Debian package
descriptions replicated with noise (see bench/bank_vectors.py; the other two dimensions are
left empty so only one 100k index has to be built on this box), three edges per entry, and
the bank's own HNSW indexes (built by the same service the job runs, once).

    .venv/bin/python bench/query_e2e.py [--size 100000] [--queries 120]
"""

from __future__ import annotations

import argparse
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
            short = f"{(i * 2654435761 + 777) % 2**32:08x}"
            copy.write_row(
                (
                    bank.pk,
                    kind_id,
                    short,
                    titles[i].capitalize(),
                    contents[i],
                    "",
                    "",
                    [],
                    [],
                    "{}",
                    *tail,
                )
            )
    cursor.execute("SELECT id FROM kb_entry WHERE bank_id = %s ORDER BY id", [bank.pk])
    ids = [row[0] for row in cursor.fetchall()]
    content = bank_vectors.bank_vectors(base, n, 0.02, 1)
    with cursor.copy(search_bench.EMBEDDING_COPY) as copy:
        copy.set_types(
            ["int8", "int8", "vector", "vector", "vector", "varchar", "varchar", "timestamptz"]
        )
        for i, entry_id in enumerate(ids):
            copy.write_row((entry_id, bank.pk, content[i], None, None, "minilm-perturbed", "", now))
    import fold as fold_bench

    pairs = list(zip(rng.choice(ids, 3 * n).tolist(), rng.choice(ids, 3 * n).tolist(), strict=True))
    fold_bench.copy_edges(cursor, bank, pairs, rng)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=120)
    parser.add_argument(
        "--bank", default="", help="Measure an existing bank as it is (no load, no edges added)."
    )
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import bank_vectors
    import search as search_bench
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext
    from pgvector.psycopg import register_vector
    from rest_framework.test import APIClient

    from kb.models import Bank, EntryKind
    from kb.services.tokens import create_token
    from kb.services.vector_index import ensure_bank_vector_indexes

    rng = np.random.default_rng(9)
    base, _ = bank_vectors.real_vectors(4000, 200)
    questions = bank_vectors.descriptions(4000 + 200 + args.queries)[-args.queries :]
    connection.ensure_connection()
    register_vector(connection.connection)
    kind_id = EntryKind.objects.get(bank=None, name="fact").pk
    if args.bank:
        bank = Bank.objects.get(slug=args.bank)
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM kb_entryembedding WHERE bank_id = %s", [bank.pk])
            args.size = cursor.fetchone()[0]
    else:
        bank = Bank.objects.get_or_create(slug="bench-e2e", defaults={"name": "E2E query bench"})[0]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM kb_entryembedding WHERE bank_id = %s", [bank.pk])
        if not args.bank and cursor.fetchone()[0] != args.size:
            started = time.perf_counter()
            with transaction.atomic():
                load(cursor, bank, base, args.size, kind_id, rng)
            cursor.execute("VACUUM ANALYZE kb_entry, kb_entryembedding, graph_edge")
            print(f"loaded in {time.perf_counter() - started:.1f}s", flush=True)
        cursor.execute("SET maintenance_work_mem = '512MB'")
    report = ensure_bank_vector_indexes(bank, force=True, concurrently=False)
    if report.created:
        print(f"built {report.created} in {report.seconds:.1f}s", flush=True)
    _, raw = create_token("bench-e2e", [bank], "read")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    url = f"/api/v1/banks/{bank.slug}/query"

    def run(texts):
        seconds, per_statement = [], defaultdict(list)
        for text in texts:
            with CaptureQueriesContext(connection) as ctx:
                started = time.perf_counter()
                response = client.post(url, {"query": text}, format="json")
                seconds.append(time.perf_counter() - started)
            assert response.status_code == 200, response.content[:300]
            for q in ctx.captured_queries:
                per_statement[_label(q["sql"])].append(float(q["time"]))
        return seconds, per_statement, len(ctx.captured_queries)

    run(questions[:5])  # warm-up: model load, connections
    new_s, per_statement, statements = run(questions)
    repeat_s, _, _ = run(questions[: args.queries // 2])
    print(f"\nMachine: {search_bench.machine()} (shared with other engineers' jobs)")
    print(
        f"Bank: {args.size:,} entries, fold on (pool 20, limit 8, neighbors 3); {statements} statements per query\n"
    )
    print("| POST /query | p50 (ms) | p95 (ms) |")
    print("|---|---|---|")
    for label, s in (
        ("new question (embedding computed)", new_s),
        ("repeated question (embedding cached)", repeat_s),
    ):
        ms = np.array(s) * 1000
        print(f"| {label} | {np.percentile(ms, 50):.1f} | {np.percentile(ms, 95):.1f} |")
    print("\n| statement | count/query | p50 (ms) | p95 (ms) |")
    print("|---|---|---|---|")
    for label, times in sorted(per_statement.items(), key=lambda kv: -np.percentile(kv[1], 50)):
        ms = np.array(times) * 1000
        print(
            f"| {label} | {len(times) / len(new_s):.1f} | {np.percentile(ms, 50):.2f} | {np.percentile(ms, 95):.2f} |"
        )


def _label(sql: str) -> str:
    s = " ".join(sql.split())
    if "WITH vc AS" in s:
        return "search (rank_candidates)"
    if "WITH qv AS" in s:
        return "fold: neighbours"
    if "FROM graph_edge ed JOIN graph_edgetype" in s:
        return "fold: edges among the pool"
    for word in ("kb_agenttoken", "kb_bank", "kb_entry", "graph_querylog"):
        if word in s:
            return f"{s.split()[0]} {word}"
    return s[:40]


if __name__ == "__main__":
    main()
