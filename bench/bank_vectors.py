"""Per-bank vector search (issue 12 item 3): one bank among five in one table, searched through
its own partial HNSW index, against the same bank alone in a table of its own, and against the
old path — one HNSW index shared by all five banks' rows, the query filtered by ``bank_id``
with pgvector's iterative scan (``hnsw.iterative_scan = relaxed_order``, ``ef_search`` 100, as
the app's connections set them); recall@10 of each against exact search.

Vectors are real MiniLM embeddings of Debian package descriptions (the apt lists on this
machine): ``--real`` descriptions are embedded once (cached in ``bench/.cache``), then each of
the 5 banks of ``--per-bank`` entries takes them in a different order with Gaussian noise
(``--noise`` per dimension, renormalised), because embedding 250k texts on 2 cores takes too
long. Queries are embeddings of other, held-out descriptions. Only the content dimension is
filled (one index per bank to build); the search statement is the app's vector arm.

    .venv/bin/python bench/bank_vectors.py [--per-bank 50000] [--real 4000] [--queries 200]

The old path's table (``bench_banks_shared``: the five banks' rows with one plain HNSW index)
and the alone table are rebuilt when ``--per-bank`` changes; ``--per-bank 20000`` fits a busy
machine (the shared index then holds 100,000 vectors).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
CACHE = HERE / ".cache"
PACKAGES = Path("/var/lib/apt/lists")
ARM = (
    "SELECT entry_id FROM {table} WHERE bank_id = {bank} AND content IS NOT NULL"
    " ORDER BY content <=> %s::vector LIMIT 10"
)
EXACT = (
    "SELECT entry_id FROM {table} WHERE bank_id = {bank} AND content IS NOT NULL"
    " ORDER BY (content <=> %s::vector) + 0 LIMIT 10"
)


def descriptions(limit: int) -> list[str]:
    files = sorted(
        PACKAGES.glob("*_main_binary-amd64_Packages.lz4"), key=lambda p: -p.stat().st_size
    )
    if not files:
        raise SystemExit("No apt Packages lists in /var/lib/apt/lists (run apt-get update).")
    text = subprocess.run(["lz4", "-dc", str(files[0])], capture_output=True, check=True).stdout
    out = []
    for line in text.decode("utf-8", "replace").splitlines():
        if line.startswith("Description: "):
            out.append(line[len("Description: ") :].strip())
    seen = list(dict.fromkeys(out))
    rng = np.random.default_rng(5)
    rng.shuffle(seen)
    return seen[:limit]


def real_vectors(count: int, queries: int) -> tuple[np.ndarray, np.ndarray]:
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"minilm_debian_{count}_{queries}.npz"
    if path.exists():
        data = np.load(path)
        return data["base"], data["queries"]
    from kb.services.embedding import get_embedder

    texts = descriptions(count + queries)
    started = time.perf_counter()
    vectors = np.array(get_embedder().embed(texts), dtype=np.float32)
    print(f"embedded {len(texts)} descriptions in {time.perf_counter() - started:.1f}s", flush=True)
    np.savez(path, base=vectors[:count], queries=vectors[count:])
    return vectors[:count], vectors[count:]


def bank_vectors(base: np.ndarray, n: int, noise: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(base), n)
    v = base[picks] + rng.normal(0, noise, (n, base.shape[1])).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def load(cursor, bank, vectors: np.ndarray, kind_id: int) -> None:
    import search as search_bench
    from django.utils import timezone

    cursor.execute("DELETE FROM kb_entryembedding WHERE bank_id = %s", [bank.pk])
    cursor.execute("DELETE FROM kb_entry WHERE bank_id = %s", [bank.pk])
    now, n = timezone.now(), len(vectors)
    short_ids = [f"{(i * 2654435761 + 12345 + bank.pk * 7919) % 2**32:08x}" for i in range(n)]
    tail = ("live", now, [], [], True, "", "", now, now, "", 0, "bench")
    with cursor.copy(f"COPY kb_entry ({search_bench.ENTRY_COLUMNS}) FROM STDIN") as copy:
        for i in range(n):
            copy.write_row(
                (bank.pk, kind_id, short_ids[i], f"Package {i}", "", "", "", [], [], "{}", *tail)
            )
    cursor.execute("SELECT id FROM kb_entry WHERE bank_id = %s ORDER BY id", [bank.pk])
    ids = [row[0] for row in cursor.fetchall()]
    with cursor.copy(search_bench.EMBEDDING_COPY) as copy:
        copy.set_types(
            ["int8", "int8", "vector", "vector", "vector", "varchar", "varchar", "timestamptz"]
        )
        for entry_id, c in zip(ids, vectors, strict=True):
            copy.write_row((entry_id, bank.pk, c, None, None, "minilm-perturbed", "", now))


def copy_table(cursor, table: str, bank_ids: list[int], rows: int) -> None:
    """``table``: the rows of ``bank_ids`` with one plain HNSW index, (re)built unless it
    already holds ``rows`` rows (no bank_id index: the old path reached a bank's rows through
    the shared HNSW index, filtered)."""
    cursor.execute("SELECT to_regclass(%s)", [table])
    if cursor.fetchone()[0] is not None:
        cursor.execute(f"SELECT count(*) FROM {table}")
        if cursor.fetchone()[0] == rows:
            return
        cursor.execute(f"DROP TABLE {table}")
    started = time.perf_counter()
    cursor.execute(
        f"CREATE TABLE {table} AS SELECT entry_id, bank_id, content FROM kb_entryembedding"
        " WHERE bank_id = ANY(%s)",
        [bank_ids],
    )
    cursor.execute(
        f"CREATE INDEX ON {table} USING hnsw (content vector_cosine_ops)"
        " WITH (m = 16, ef_construction = 64)"
    )
    cursor.execute(f"ANALYZE {table}")
    print(f"built {table} ({rows:,} rows) in {time.perf_counter() - started:.1f}s", flush=True)


def timings(cursor, sql: str, queries: np.ndarray) -> tuple[list[float], list[list[int]]]:
    seconds, hits = [], []
    for q in queries:
        literal = "[" + ",".join(f"{x:.6f}" for x in q) + "]"
        started = time.perf_counter()
        cursor.execute(sql, [literal])
        rows = [r[0] for r in cursor.fetchall()]
        seconds.append(time.perf_counter() - started)
        hits.append(rows)
    return seconds, hits


def interleaved(cursor, paths: list[tuple[str, int]], queries: np.ndarray):
    """``timings`` of several (statement, ef_search) paths, query by query in turn (each query
    through every path before the next), so a busy machine's swings fall on all alike."""
    out = [([], []) for _ in paths]
    for q in queries:
        for i, (sql, ef) in enumerate(paths):
            cursor.execute(f"SET hnsw.ef_search = {int(ef)}")  # not timed
            seconds, hits = timings(cursor, sql, q[None, :])
            out[i][0].extend(seconds)
            out[i][1].extend(hits)
    return out


def recall(approx: list[list[int]], exact: list[list[int]]) -> float:
    return float(
        np.mean([len(set(a) & set(e)) / max(1, len(e)) for a, e in zip(approx, exact, strict=True)])
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-bank", type=int, default=50_000)
    parser.add_argument("--banks", type=int, default=5)
    parser.add_argument("--real", type=int, default=4000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--noise", type=float, default=0.02)
    parser.add_argument(
        "--old-ef",
        default="100,400",
        help="hnsw.ef_search values for the old shared-index path (comma-separated): the old"
        " path's recall falls with the bank's share of the index, a larger ef buys it back.",
    )
    return parser.parse_args()


def load_banks(cursor, args, base: np.ndarray) -> list:
    """The ``--banks`` banks of ``--per-bank`` vectors each, loaded when missing."""
    from django.db import transaction

    from kb.models import Bank, EntryKind

    kind_id = EntryKind.objects.get(bank=None, name="fact").pk
    banks = []
    for b in range(args.banks):
        bank = Bank.objects.get_or_create(
            slug=f"bench-vec-{b}", defaults={"name": f"Per-bank vectors {b}"}
        )[0]
        banks.append(bank)
        cursor.execute("SELECT count(*) FROM kb_entryembedding WHERE bank_id = %s", [bank.pk])
        if cursor.fetchone()[0] != args.per_bank:
            started = time.perf_counter()
            with transaction.atomic():
                load(cursor, bank, bank_vectors(base, args.per_bank, args.noise, 100 + b), kind_id)
            print(f"loaded {bank.slug} in {time.perf_counter() - started:.1f}s", flush=True)
    cursor.execute("VACUUM ANALYZE kb_entryembedding")
    return banks


def build_indexes(cursor, args, banks: list, target) -> None:
    """The measured bank's own index (the job builds one per large bank; the other banks'
    indexes do not change what this bank's query reads, so they are not built here), the same
    bank alone in a table of its own with a plain HNSW index, and the old path: all the banks'
    rows under one HNSW index, filtered by bank_id."""
    from django.db import connection

    from kb.services.vector_index import existing_indexes

    cursor.execute("SET maintenance_work_mem = '512MB'")
    if f"kb_emb_content_bank_{target.pk}" not in existing_indexes(target.pk):
        started = time.perf_counter()
        with connection.cursor() as c2:
            c2.execute(
                f"CREATE INDEX kb_emb_content_bank_{target.pk} ON kb_entryembedding USING hnsw"
                f" (content vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
                f" WHERE bank_id = {target.pk}"
            )
        print(f"built the bank's own index in {time.perf_counter() - started:.1f}s", flush=True)
    copy_table(cursor, "bench_bank_alone", [target.pk], args.per_bank)
    copy_table(cursor, "bench_banks_shared", [b.pk for b in banks], args.per_bank * args.banks)
    cursor.execute("RESET maintenance_work_mem")


def show(cursor, name: str) -> str:
    cursor.execute(f"SHOW {name}")
    return cursor.fetchone()[0]


def explain(cursor, sql: str, probe: list[str]) -> str:
    cursor.execute("EXPLAIN " + sql, probe)
    return " ".join(r[0] for r in cursor.fetchall())


def measure(cursor, args, target, queries: np.ndarray) -> dict:
    """The paths query by query in turn; their timings and hits, the settings and the plans."""
    own = ARM.format(table="kb_entryembedding", bank=target.pk)
    alone = ARM.format(table="bench_bank_alone", bank=target.pk)
    old = ARM.format(table="bench_banks_shared", bank=target.pk)
    exact = EXACT.format(table="kb_entryembedding", bank=target.pk)
    probe = ["[" + ",".join(["0.05"] * len(queries[0])) + "]"]
    ef_search = show(cursor, "hnsw.ef_search")
    ef = int(ef_search)
    old_efs = [int(x) for x in args.old_ef.split(",") if x.strip()]
    paths = [(own, ef), (alone, ef), *((old, e) for e in old_efs), (exact, ef)]
    result = {
        "iterative": show(cursor, "hnsw.iterative_scan"),
        "ef_search": ef_search,
        "plan": explain(cursor, own, probe),
        "old_plan": explain(cursor, old, probe),
        "old_efs": old_efs,
    }
    interleaved(cursor, paths, queries[:10])  # warm-up
    result["measured"] = interleaved(cursor, paths, queries)
    cursor.execute(f"SET hnsw.ef_search = {ef}")
    return result


def report(args, target, queries: np.ndarray, result: dict) -> None:
    import search as search_bench

    (s_own, h_own), (s_alone, h_alone), *olds, (s_exact, h_exact) = result["measured"]
    print(f"\nMachine: {search_bench.machine()}; load average {os.getloadavg()[0]:.2f}")
    print(f"hnsw.iterative_scan = {result['iterative']}, hnsw.ef_search = {result['ef_search']}")
    own_index = f"kb_emb_content_bank_{target.pk}" in result["plan"]
    print(f"plan of the bank's query uses its own index: {own_index}")
    shared = "Index Scan using bench_banks_shared" in result["old_plan"]
    print(f"plan of the old path uses the shared HNSW index: {shared}\n")
    print(
        f"| search (one bank of {args.banks} × {args.per_bank:,}) | p50 / p95 / mean (ms) "
        "| recall@10 vs exact |"
    )
    print("|---|---|---|")
    rows = [
        *(
            (
                f"old: one HNSW index over all {args.banks} banks, bank_id filter, ef_search {e}",
                *olds[i],
            )
            for i, e in enumerate(result["old_efs"])
        ),
        (f"new: the bank's own partial HNSW, {args.banks} banks in the table", s_own, h_own),
        ("same bank alone (own table, HNSW)", s_alone, h_alone),
    ]
    for name, seconds, hits in rows:
        stats = search_bench.fmt(search_bench.stats(seconds))
        print(f"| {name} | {stats} | {recall(hits, h_exact):.3f} |")
    exact = search_bench.fmt(search_bench.stats(s_exact))
    print(f"| exact scan of the bank's rows | {exact} | 1.000 |")
    print(
        f"\nVectors: {args.real} real MiniLM embeddings of Debian descriptions, replicated with "
        f"noise {args.noise}/dim; {len(queries)} held-out description queries."
    )


def main() -> None:
    args = parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.db import connection
    from pgvector.psycopg import register_vector

    base, queries = real_vectors(args.real, args.queries)
    connection.ensure_connection()
    register_vector(connection.connection)
    with connection.cursor() as cursor:
        banks = load_banks(cursor, args, base)
        target = banks[args.banks // 2]
        build_indexes(cursor, args, banks, target)
        result = measure(cursor, args, target, queries)
    report(args, target, queries, result)


if __name__ == "__main__":
    main()
