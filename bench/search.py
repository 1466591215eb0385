"""Search and embedding benchmark of Knowledge Bank: prints comparable numbers for one machine.

What it measures, on the configured database (the embedded PostgreSQL unless DATABASE_URL):

1. Bulk load. For each size N (default 10k and 100k) a bank ``<prefix>-<N>`` holds N synthetic
   "fact" entries (titles/content drawn from a Zipf-weighted word list, so the lexical arm has
   something to index) and their three 384-d embeddings (random unit vectors). A bank of the
   right size is reused. Loading uses COPY with the three HNSW indexes dropped, then rebuilds
   them (an HNSW index makes each insert a graph search). The indexes cover the whole table,
   every bank, so the 10k and 100k banks share them; they are rebuilt even if the load fails.
2. Search latency of ``rank_candidates`` (limit 8, a given query vector: no model in the loop),
   vector only and with the lexical arm, plus a single-column baseline: the content arm through
   HNSW versus an exact scan (index scans off), and the HNSW arm's recall@8 against it.
3. Throughput of the real embedder (all-MiniLM-L6-v2 on CPU): model load, 1,000 short texts
   in the embedder's own batches, and the latency of one query text.

Random unit vectors are nearly equidistant in 384-d: the hardest case for HNSW (no clusters),
so latency and recall here are pessimistic for real embeddings.

    .venv/bin/python bench/search.py [--sizes 10000,100000] [--queries 200]
                                     [--bank-prefix bench-search] [--skip-embed] [--explain]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DIM = 384
HNSW = {
    "emb_content_hnsw": "content",
    "emb_useful_hnsw": "useful_for",
    "emb_context_hnsw": "context",
}
SYSTEMS = ["billing", "search", "auth", "ingest", "web", "reports", "payments", "crm"]
WORDS = """
database index query cache latency deploy release rollback migration schema customer invoice
payment refund account token session login password tenant bank entry search vector embedding
model worker queue retry timeout error failure outage incident alert metric dashboard log trace
service api endpoint request response client server config secret key certificate backup
restore replica primary failover shard partition table column row batch import export job cron
schedule report contract supplier order shipment warehouse stock price discount tax currency
budget forecast quarter revenue margin team owner review approval policy risk compliance audit
decision architecture lesson gotcha recipe playbook goal process step role person product
feature flag experiment release train branch merge commit pipeline build test coverage lint
docker kubernetes node pod cluster memory cpu disk network dns proxy gateway load balancer
storage bucket object stream event topic consumer producer webhook callback notification email
sms template locale translation user admin permission scope group quota limit throttle
upgrade version dependency library package patch security vulnerability encryption hash
slow fast stale fresh broken flaky manual automatic daily weekly monthly legacy new old
""".split()
ZIPF = 1.0 / np.arange(1, len(WORDS) + 1) ** 0.8
ZIPF /= ZIPF.sum()
WORD_ARRAY = np.array(WORDS)
ENTRY_COLUMNS = (
    "bank_id, kind_id, short_id, title, content, summary, useful_for, systems, tasks, metadata, "
    "status, status_changed_at, anchor_files, anchor_symbols, durable, retired_reason, "
    "retired_evidence, created_at, updated_at, verified_by, usage_count, created_by"
)


def texts(rng: np.random.Generator, count: int, lo: int, hi: int) -> list[str]:
    """``count`` strings of ``lo``..``hi`` Zipf-weighted words."""
    lengths = rng.integers(lo, hi + 1, count)
    words = WORD_ARRAY[rng.choice(len(WORDS), int(lengths.sum()), p=ZIPF)]
    ends = np.cumsum(lengths)
    return [" ".join(words[end - n : end]) for end, n in zip(ends, lengths, strict=True)]


def unit_vectors(rng: np.random.Generator, *shape: int) -> np.ndarray:
    v = rng.standard_normal((*shape, DIM), dtype=np.float32)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def stats(samples: list[float]) -> dict[str, float]:
    ms = np.array(samples) * 1000
    return {
        "p50": float(np.percentile(ms, 50)),
        "p95": float(np.percentile(ms, 95)),
        "mean": float(ms.mean()),
    }


def fmt(s: dict[str, float]) -> str:
    return f"{s['p50']:.2f} / {s['p95']:.2f} / {s['mean']:.2f}"


def load_bank(cursor, bank, n: int, kind_id: int, rng: np.random.Generator) -> dict[str, float]:
    """COPY n entries and their embeddings into ``bank`` (emptied first). Bypasses the
    services on purpose: no audit operation, no simple-history rows; a benchmark bank needs
    neither, and the services would make a 100k load take hours."""
    from django.utils import timezone

    cursor.execute("DELETE FROM kb_entryembedding WHERE bank_id = %s", [bank.pk])
    cursor.execute("DELETE FROM kb_entry WHERE bank_id = %s", [bank.pk])
    now = timezone.now()
    # Distinct 8-hex ids: multiplying by an odd constant is a bijection modulo 2**32.
    short_ids = [f"{x:08x}" for x in (np.arange(n, dtype=np.uint64) * 2654435761 + 12345) % 2**32]
    titles, contents, useful = texts(rng, n, 4, 9), texts(rng, n, 30, 90), texts(rng, n, 5, 12)
    systems = rng.integers(0, len(SYSTEMS), n)
    started = time.perf_counter()
    with cursor.copy(f"COPY kb_entry ({ENTRY_COLUMNS}) FROM STDIN") as copy:
        for i in range(n):
            copy.write_row(
                (
                    bank.pk,
                    kind_id,
                    short_ids[i],
                    titles[i].capitalize(),
                    contents[i],
                    "",
                    useful[i],
                    [SYSTEMS[systems[i]]],
                    [],
                    "{}",
                    "live",
                    now,
                    [],
                    [],
                    True,
                    "",
                    "",
                    now,
                    now,
                    "",
                    0,
                    "bench",
                )
            )
    entries_s = time.perf_counter() - started
    cursor.execute("SELECT id FROM kb_entry WHERE bank_id = %s ORDER BY id", [bank.pk])
    ids = [row[0] for row in cursor.fetchall()]
    started = time.perf_counter()
    sql = (
        "COPY kb_entryembedding (entry_id, bank_id, content, useful_for, context, model, "
        "source_hash, computed_at) FROM STDIN WITH (FORMAT BINARY)"
    )
    with cursor.copy(sql) as copy:
        copy.set_types(
            ["int8", "int8", "vector", "vector", "vector", "varchar", "varchar", "timestamptz"]
        )
        for chunk in range(0, n, 10_000):
            vectors = unit_vectors(rng, min(10_000, n - chunk), 3)
            for entry_id, (c, u, x) in zip(ids[chunk : chunk + 10_000], vectors, strict=True):
                copy.write_row((entry_id, bank.pk, c, u, x, "bench-random-unit", "", now))
    return {"entries": entries_s, "embeddings": time.perf_counter() - started}


def ensure_indexes(cursor) -> float | None:
    """(Re)create the HNSW indexes as in kb/migrations/0002_initial.py; seconds if any was built."""
    cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'kb_entryembedding'")
    missing = [name for name in HNSW if name not in {row[0] for row in cursor.fetchall()}]
    if not missing:
        return None
    cursor.execute("SET maintenance_work_mem = '1GB'")
    started = time.perf_counter()
    for name in missing:
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON kb_entryembedding "
            f"USING hnsw ({HNSW[name]} vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )
        print(f"  built {name} ({time.perf_counter() - started:.1f}s so far)", flush=True)
    cursor.execute("RESET maintenance_work_mem")
    return time.perf_counter() - started


def bench_search(cursor, bank, queries: int, rng: np.random.Generator) -> dict[str, dict]:
    from kb.services.search import rank_candidates

    vectors = unit_vectors(rng, queries).tolist()
    words = texts(rng, queries, 2, 4)
    warm = min(20, queries)
    out: dict[str, dict] = {}
    for mode, lexical in (("vector", False), ("vector+lexical", True)):
        for i in range(warm):
            rank_candidates(bank, words[i], limit=8, query_vector=vectors[-1 - i], lexical=lexical)
        samples = []
        for text, vector in zip(words, vectors, strict=True):
            started = time.perf_counter()
            rank_candidates(bank, text, limit=8, query_vector=vector, lexical=lexical)
            samples.append(time.perf_counter() - started)
        out[mode] = stats(samples)
    # Baseline on one column: the same ORDER BY through HNSW and as an exact scan.
    sql = (
        "SELECT entry_id FROM kb_entryembedding WHERE bank_id = %s "
        "ORDER BY content <=> %s::vector LIMIT 8"
    )
    results: dict[str, list[set[int]]] = {}
    for mode, index_scan in (("content arm, HNSW", "on"), ("content arm, exact scan", "off")):
        cursor.execute(f"SET enable_indexscan = {index_scan}")
        for i in range(warm):
            cursor.execute(sql, [bank.pk, str(vectors[-1 - i])])
        samples, results[mode] = [], []
        for vector in vectors:
            started = time.perf_counter()
            cursor.execute(sql, [bank.pk, str(vector)])
            results[mode].append({row[0] for row in cursor.fetchall()})
            samples.append(time.perf_counter() - started)
        out[mode] = stats(samples)
    cursor.execute("RESET enable_indexscan")
    pairs = zip(results["content arm, HNSW"], results["content arm, exact scan"], strict=True)
    out["recall"] = float(np.mean([len(a & b) / 8 for a, b in pairs]))
    return out


def explain(cursor, bank, rng: np.random.Generator) -> None:
    """EXPLAIN ANALYZE of the rank_candidates statement (vector + lexical arms) for ``bank``."""
    from kb.services.search import _build_sql

    params = {
        "bank": bank.pk,
        "vec": str(unit_vectors(rng, 1)[0].tolist()),
        "k": 80,
        "text": texts(rng, 1, 2, 3)[0],
    }
    cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + _build_sql(True, True, []), params)
    print(f"\nEXPLAIN ANALYZE, bank {bank.slug}, text {params['text']!r}:")
    print("\n".join(row[0] for row in cursor.fetchall()))


def bench_embedder(rng: np.random.Generator) -> dict[str, float]:
    from kb.services.embedding import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    started = time.perf_counter()
    embedder._load()
    load_s = time.perf_counter() - started
    templates = [
        "How do we {} the {} {} in {}?",
        "Why is {} {} {} on {}",
        "{} {} for {}: use {}",
        "Decision: {} {} instead of {} for {}",
        "Gotcha: {} {} breaks {} {}",
    ]
    pool = texts(rng, 4000, 1, 1)
    samples = [templates[i % len(templates)].format(*pool[4 * i : 4 * i + 4]) for i in range(1000)]
    embedder.embed(samples[:64])  # warm-up
    started = time.perf_counter()
    embedder.embed(samples)
    batch_s = time.perf_counter() - started
    single = []
    for text in samples[:50]:
        started = time.perf_counter()
        embedder.embed([text])
        single.append(time.perf_counter() - started)
    return {
        "load": load_s,
        "batch": batch_s,
        "rate": len(samples) / batch_s,
        "single": stats(single),
    }


def machine() -> str:
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in info.splitlines()
            if line.startswith("model name")
        ),
        "?",
    )
    mem = Path("/proc/meminfo").read_text().split()[1] if Path("/proc/meminfo").exists() else "0"
    return f"{len(os.sched_getaffinity(0))} CPUs (nproc), {cpu}, {int(mem) / 1024**2:.1f} GiB RAM"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--bank-prefix", default="bench-search")
    parser.add_argument("--skip-embed", action="store_true", help="skip the embedder benchmark")
    parser.add_argument(
        "--explain", action="store_true", help="EXPLAIN ANALYZE one search per size"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.db import connection, transaction
    from pgvector.psycopg import register_vector

    from kb.models import Bank, EntryKind

    rng = np.random.default_rng(20240601)
    kind_id = EntryKind.objects.get(bank=None, name="fact").pk
    banks, loads, build_s = {}, {}, None
    connection.ensure_connection()
    register_vector(connection.connection)  # binary COPY of numpy vectors; before any cursor
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT version(), (SELECT extversion FROM pg_extension WHERE extname = 'vector'), "
            "current_setting('hnsw.ef_search', true), current_setting('hnsw.iterative_scan', true)"
        )
        pg, pgvector, ef_search, iterative = cursor.fetchone()
        for n in sizes:
            banks[n], _ = Bank.objects.get_or_create(
                slug=f"{args.bank_prefix}-{n}", defaults={"name": f"Search benchmark, {n} entries"}
            )
        cursor.execute(
            "SELECT (SELECT count(*) FROM kb_entry e WHERE e.bank_id = b.id), "
            "(SELECT count(*) FROM kb_entryembedding m WHERE m.bank_id = b.id) "
            "FROM kb_bank b WHERE b.id = ANY(%s) ORDER BY b.id",
            [[b.pk for b in banks.values()]],
        )
        counts = dict(zip(sorted(b.pk for b in banks.values()), cursor.fetchall(), strict=True))
        todo = [n for n in sizes if counts[banks[n].pk] != (n, n)]
        try:
            if todo:
                for name in HNSW:
                    cursor.execute(f"DROP INDEX IF EXISTS {name}")
            for n in todo:
                print(f"loading {banks[n].slug} ({n} entries)…", flush=True)
                with transaction.atomic():
                    loads[n] = load_bank(cursor, banks[n], n, kind_id, rng)
                print(
                    f"  entries {loads[n]['entries']:.1f}s, embeddings {loads[n]['embeddings']:.1f}s",
                    flush=True,
                )
        finally:
            print("ensuring HNSW indexes…", flush=True)
            build_s = ensure_indexes(cursor)
        if todo:
            started = time.perf_counter()
            cursor.execute("VACUUM (ANALYZE) kb_entry, kb_entryembedding")
            print(f"  vacuum analyze {time.perf_counter() - started:.1f}s", flush=True)
        cursor.execute("SELECT count(*) FROM kb_entryembedding")
        table_rows = cursor.fetchone()[0]
        results = {}
        for n in sizes:
            print(f"searching {banks[n].slug} ({args.queries} queries per mode)…", flush=True)
            results[n] = bench_search(cursor, banks[n], args.queries, rng)
            if args.explain:
                explain(cursor, banks[n], rng)
    emb = None if args.skip_embed else bench_embedder(rng)

    print(
        f"\nMachine: {machine()}\nPostgreSQL: {pg.split(' on ')[0]}, pgvector {pgvector}, "
        f"hnsw.ef_search={ef_search}, hnsw.iterative_scan={iterative}\n"
    )
    print("| figure | " + " | ".join(f"{n:,}" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))

    def row(label: str, cell) -> None:
        print(f"| {label} | " + " | ".join(cell(n) for n in sizes) + " |")

    row("bank", lambda n: banks[n].slug)
    row(
        "load: COPY entries (s)", lambda n: f"{loads[n]['entries']:.1f}" if n in loads else "reused"
    )
    row(
        "load: COPY embeddings (s)",
        lambda n: f"{loads[n]['embeddings']:.1f}" if n in loads else "reused",
    )
    for mode in ("vector", "vector+lexical", "content arm, HNSW", "content arm, exact scan"):
        row(f"{mode}: p50 / p95 / mean (ms)", lambda n, m=mode: fmt(results[n][m]))
    row(
        "exact scan / HNSW, p50",
        lambda n: (
            f"{results[n]['content arm, exact scan']['p50'] / results[n]['content arm, HNSW']['p50']:.1f}×"
        ),
    )
    row("recall@8 of the HNSW content arm", lambda n: f"{results[n]['recall']:.3f}")
    print("\n| figure | value |\n|---|---|")
    print(
        f"| HNSW build, 3 indexes over the whole table (s) | "
        f"{f'{build_s:.1f}' if build_s is not None else 'not rebuilt (indexes present)'} |"
    )
    print(f"| embedding rows under the shared HNSW indexes (all banks) | {table_rows:,} |")
    if emb:
        print(f"| MiniLM model load (s) | {emb['load']:.2f} |")
        print(f"| MiniLM 1,000 short texts, batch 64 (s) | {emb['batch']:.2f} |")
        print(f"| MiniLM throughput (texts/s) | {emb['rate']:.0f} |")
        print(f"| MiniLM one query text p50 / p95 / mean (ms) | {fmt(emb['single'])} |")


if __name__ == "__main__":
    main()
