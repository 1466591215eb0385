"""Search and embedding benchmark of Knowledge Bank: comparable numbers for one machine.

What it measures, on the configured database (the embedded PostgreSQL unless DATABASE_URL):

1. Bulk load. Each size N (default 10k and 100k) gets a bank ``<prefix>-<N>`` of N synthetic
   "fact" entries (titles/content from a Zipf-weighted vocabulary, so the lexical arm has
   something to index) and their three 384-d embeddings (random unit vectors). A bank already
   of the right size is reused. Loading uses COPY with the bank's own HNSW indexes dropped, then
   rebuilds them (with a live HNSW index every insert is a graph search). The indexes span the
   whole table, every bank: the 10k and 100k banks share them. They are rebuilt on error too.
2. Search latency of ``rank_candidates`` (limit 8, query vector given: no model in the loop),
   vector arms only and with the lexical arm; and a one-column baseline, the content arm
   through HNSW versus an exact scan (index scans off), with the HNSW arm's recall@8.
3. The real embedder (all-MiniLM-L6-v2, CPU): model load, 1,000 short texts in the embedder's
   own batches of 64, and the latency of one query text (what a search pays first).

Random unit vectors in 384-d are nearly equidistant: the hardest case for HNSW (no clusters),
so HNSW latency and recall here are pessimistic compared with real embeddings.

    .venv/bin/python bench/search.py [--sizes 10000,100000] [--queries 200]
        [--bank-prefix bench-search] [--skip-embed] [--explain]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DIM = 384

SYSTEMS = ["billing", "search", "auth", "ingest", "web", "reports", "payments", "crm"]
COMMON = """
database index query cache latency deploy release rollback migration schema customer invoice
payment refund account token session login password tenant search vector embedding model queue
retry timeout error outage incident alert metric dashboard log trace service api endpoint request
client server config secret certificate backup restore replica failover shard partition table
batch import export job cron schedule report contract supplier order shipment warehouse stock
price discount tax currency budget forecast revenue margin team owner review approval policy
risk audit decision architecture lesson recipe playbook goal process step role product feature
flag experiment branch merge pipeline build test docker kubernetes node cluster memory disk
network dns proxy gateway storage bucket stream event topic consumer webhook notification email
template user admin permission scope quota limit upgrade version dependency package patch
security encryption slow stale broken flaky manual nightly weekly legacy
""".split()
# A long tail of rarer made-up words (product names, identifiers) after the common ones.
_SYL = "ka lo mi ra te vo zu pe dra ny so gri fa bel tor quin".split()
WORDS = np.array(COMMON + [a + b + c for a in _SYL for b in _SYL for c in _SYL])
ZIPF = 1.0 / np.arange(1, len(WORDS) + 1)
ZIPF /= ZIPF.sum()
ENTRY_COLUMNS = (
    "bank_id, kind_id, short_id, title, content, summary, useful_for, systems, tasks, metadata, "
    "status, status_changed_at, anchor_files, anchor_symbols, durable, retired_reason, "
    "retired_evidence, created_at, updated_at, verified_by, usage_count, created_by"
)
EMBEDDING_COPY = (
    "COPY kb_entryembedding (entry_id, bank_id, content, useful_for, context, model, source_hash,"
    " computed_at) FROM STDIN WITH (FORMAT BINARY)"
)
ONE_ARM = "SELECT entry_id FROM kb_entryembedding WHERE bank_id = %s ORDER BY content <=> %s::vector LIMIT 8"


def texts(rng: np.random.Generator, count: int, lo: int, hi: int) -> list[str]:
    """``count`` strings of ``lo``..``hi`` Zipf-weighted words."""
    lengths = rng.integers(lo, hi + 1, count)
    words = WORDS[rng.choice(len(WORDS), int(lengths.sum()), p=ZIPF)]
    ends = np.cumsum(lengths)
    return [" ".join(words[end - n : end]) for end, n in zip(ends, lengths, strict=True)]


def unit_vectors(rng: np.random.Generator, *shape: int) -> np.ndarray:
    v = rng.standard_normal((*shape, DIM), dtype=np.float32)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def stats(seconds: list[float]) -> dict[str, float]:
    ms = np.array(seconds) * 1000
    return {"p50": np.percentile(ms, 50), "p95": np.percentile(ms, 95), "mean": ms.mean()}


def fmt(s: dict[str, float]) -> str:
    return f"{s['p50']:.2f} / {s['p95']:.2f} / {s['mean']:.2f}"


def timed(fn, *args, **kwargs) -> float:
    started = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - started


def load_bank(cursor, bank, n: int, kind_id: int, rng: np.random.Generator) -> dict[str, float]:
    """Empty ``bank`` and COPY n entries and their embeddings into it. This bypasses the
    services on purpose: a benchmark bank needs no audit operation and no simple-history rows,
    and writing those would make a 100k load take many minutes instead of seconds."""
    from django.utils import timezone

    cursor.execute("DELETE FROM kb_entryembedding WHERE bank_id = %s", [bank.pk])
    cursor.execute("DELETE FROM kb_entry WHERE bank_id = %s", [bank.pk])
    now = timezone.now()
    # Distinct 8-hex ids: multiplying by an odd constant is a bijection modulo 2**32.
    short_ids = [f"{x:08x}" for x in (np.arange(n, dtype=np.uint64) * 2654435761 + 12345) % 2**32]
    titles, contents, useful = texts(rng, n, 4, 9), texts(rng, n, 30, 90), texts(rng, n, 5, 12)
    systems = rng.integers(0, len(SYSTEMS), n)
    tail = ("live", now, [], [], True, "", "", now, now, "", 0, "bench")
    started = time.perf_counter()
    with cursor.copy(f"COPY kb_entry ({ENTRY_COLUMNS}) FROM STDIN") as copy:
        for i in range(n):
            head = (bank.pk, kind_id, short_ids[i], titles[i].capitalize(), contents[i], "")
            copy.write_row((*head, useful[i], [SYSTEMS[systems[i]]], [], "{}", *tail))
    entries_s = time.perf_counter() - started
    cursor.execute("SELECT id FROM kb_entry WHERE bank_id = %s ORDER BY id", [bank.pk])
    ids = [row[0] for row in cursor.fetchall()]
    started = time.perf_counter()
    with cursor.copy(EMBEDDING_COPY) as copy:
        copy.set_types(
            ["int8", "int8", "vector", "vector", "vector", "varchar", "varchar", "timestamptz"]
        )
        for chunk in range(0, n, 10_000):
            vectors = unit_vectors(rng, min(10_000, n - chunk), 3)
            for entry_id, (c, u, x) in zip(ids[chunk : chunk + 10_000], vectors, strict=True):
                copy.write_row((entry_id, bank.pk, c, u, x, "bench-random-unit", "", now))
    return {"entries": entries_s, "embeddings": time.perf_counter() - started}


def ensure_indexes(cursor, banks=()) -> float | None:
    """Give each bank past the threshold its own HNSW indexes (kb.services.vector_index, as the
    job does); seconds, or None when nothing was built. Smaller banks are scanned exactly."""
    from kb.services.vector_index import ensure_bank_vector_indexes

    cursor.execute("SET maintenance_work_mem = '1GB'")
    started, built = time.perf_counter(), []
    for bank in banks:
        built += ensure_bank_vector_indexes(bank, concurrently=False).created
        if built:
            print(f"  built {built} ({time.perf_counter() - started:.1f}s so far)", flush=True)
    cursor.execute("RESET maintenance_work_mem")
    return time.perf_counter() - started if built else None


def bench_search(cursor, bank, queries: int, rng: np.random.Generator) -> dict:
    from kb.services.search import rank_candidates

    vectors, words = unit_vectors(rng, queries).tolist(), texts(rng, queries, 2, 4)
    warm = list(zip(words[:20], vectors[::-1][:20], strict=True))
    out: dict = {}
    for mode, lexical in (("vector", False), ("vector+lexical", True)):
        for text, vector in warm:
            rank_candidates(bank, text, limit=8, query_vector=vector, lexical=lexical)
        out[mode] = stats(
            [
                timed(rank_candidates, bank, text, limit=8, query_vector=vector, lexical=lexical)
                for text, vector in zip(words, vectors, strict=True)
            ]
        )
    found: dict[str, list[set[int]]] = {}
    for mode, index_scan in (("content arm, HNSW", "on"), ("content arm, exact scan", "off")):
        cursor.execute(f"SET enable_indexscan = {index_scan}")
        for _, vector in warm:
            cursor.execute(ONE_ARM, [bank.pk, str(vector)])
        samples, found[mode] = [], []
        for vector in vectors:
            samples.append(timed(cursor.execute, ONE_ARM, [bank.pk, str(vector)]))
            found[mode].append({row[0] for row in cursor.fetchall()})
        out[mode] = stats(samples)
    cursor.execute("RESET enable_indexscan")
    pairs = zip(found["content arm, HNSW"], found["content arm, exact scan"], strict=True)
    out["recall"] = float(np.mean([len(hnsw & exact) / 8 for hnsw, exact in pairs]))
    return out


def explain(cursor, bank, rng: np.random.Generator) -> None:
    """EXPLAIN ANALYZE of the search's two statements for ``bank``: the lexical arm, then the
    vector arms with the lexical arm's ids (as ``rank_and_embed`` runs them)."""
    from kb.services.search import LEXICAL_SCAN, _lexical_params, _statement

    vector, text = str(unit_vectors(rng, 1)[0].tolist()), texts(rng, 1, 2, 3)[0]
    lexical_sql = _statement(True, (), bank.pk, 80, LEXICAL_SCAN)
    cursor.execute(lexical_sql, _lexical_params(text))
    ids = [row[0] for row in cursor.fetchall()]
    search_sql = _statement(False, (), bank.pk, 80, LEXICAL_SCAN)
    shapes = (
        ("lexical arm", lexical_sql, _lexical_params(text)),
        ("vector arms", search_sql, {"vec": vector, "lexical_ids": ids}),
    )
    for name, sql, params in shapes:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
        print(f"\nEXPLAIN ANALYZE of the search's {name}, bank {bank.slug}, text {text!r}:")
        for (line,) in cursor.fetchall():
            print(re.sub(r"'\[[^\]]*\]'::vector", "'[…]'::vector", line))


def bench_embedder(rng: np.random.Generator) -> dict:
    from kb.services.embedding import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    load_s = timed(embedder._load)
    patterns = ["How do we {} the {} {} in {}?", "Why is {} {} {} on {}", "{} {} for {}: use {}",
                "Decision: {} {} instead of {} for {}", "Gotcha: {} {} breaks {} {}"]  # fmt: skip
    pool = texts(rng, 4000, 1, 1)
    samples = [patterns[i % 5].format(*pool[4 * i : 4 * i + 4]) for i in range(1000)]
    embedder.embed(samples[:64])  # warm-up
    batch_s = timed(embedder.embed, samples)
    single = stats([timed(embedder.embed, [text]) for text in samples[:50]])
    return {"load": load_s, "batch": batch_s, "rate": len(samples) / batch_s, "single": single}


def machine() -> str:
    cpu = re.search(r"model name\s*:\s*(.*)", Path("/proc/cpuinfo").read_text())
    mem_kib = int(Path("/proc/meminfo").read_text().split()[1])
    nproc = len(os.sched_getaffinity(0))
    return f"nproc {nproc}, {cpu[1] if cpu else '?'}, {mem_kib / 2**20:.1f} GiB RAM"


def prepare(cursor, sizes: list[int], prefix: str, rng: np.random.Generator):
    """The benchmark banks, loaded if not already of the right size; HNSW indexes ensured."""
    from django.db import transaction

    from kb.models import Bank, EntryKind

    kind_id = EntryKind.objects.get(bank=None, name="fact").pk
    banks, loads, todo = {}, {}, []
    for n in sizes:
        name = f"Search benchmark, {n:,} entries"
        banks[n] = Bank.objects.get_or_create(slug=f"{prefix}-{n}", defaults={"name": name})[0]
        cursor.execute(
            "SELECT (SELECT count(*) FROM kb_entry WHERE bank_id = %(b)s),"
            " (SELECT count(*) FROM kb_entryembedding WHERE bank_id = %(b)s)",
            {"b": banks[n].pk},
        )
        todo += [n] if cursor.fetchone() != (n, n) else []
    try:
        from kb.services.vector_index import drop_bank_vector_indexes

        for n in todo:
            drop_bank_vector_indexes(banks[n].pk)
        for n in todo:
            print(f"loading {banks[n].slug} ({n:,} entries)…", flush=True)
            with transaction.atomic():
                loads[n] = load_bank(cursor, banks[n], n, kind_id, rng)
            print("  entries {entries:.1f}s, embeddings {embeddings:.1f}s".format(**loads[n]))
    finally:
        print("ensuring the HNSW indexes exist…", flush=True)
        build_s = ensure_indexes(cursor, list(banks.values()))
    if todo:
        vacuum_s = timed(cursor.execute, "VACUUM (ANALYZE) kb_entry, kb_entryembedding")
        print(f"  VACUUM ANALYZE {vacuum_s:.1f}s", flush=True)
    return banks, loads, build_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--bank-prefix", default="bench-search")
    parser.add_argument("--skip-embed", action="store_true", help="skip the embedder benchmark")
    parser.add_argument("--explain", action="store_true", help="EXPLAIN ANALYZE a search per size")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.db import connection
    from pgvector.psycopg import register_vector

    rng, load_start = np.random.default_rng(20240601), os.getloadavg()[0]
    connection.ensure_connection()
    register_vector(connection.connection)  # binary COPY of numpy vectors; before any cursor
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT version(), (SELECT extversion FROM pg_extension WHERE extname = 'vector'),"
            " current_setting('hnsw.ef_search', true), current_setting('hnsw.iterative_scan', true)"
        )
        pg, pgvector, ef_search, iterative = cursor.fetchone()
        banks, loads, build_s = prepare(cursor, sizes, args.bank_prefix, rng)
        cursor.execute("SELECT count(*) FROM kb_entryembedding")
        table_rows = cursor.fetchone()[0]
        results = {}
        for n in sizes:
            print(f"searching {banks[n].slug} ({args.queries} queries per mode)…", flush=True)
            results[n] = bench_search(cursor, banks[n], args.queries, rng)
            if args.explain:
                explain(cursor, banks[n], rng)
    emb = None if args.skip_embed else bench_embedder(rng)

    load_end = os.getloadavg()[0]
    print(
        f"\nMachine: {machine()}; 1-min load average {load_start:.2f} at start, {load_end:.2f} at end"
    )
    print(f"PostgreSQL: {pg.split(' on ')[0]}, pgvector {pgvector}, hnsw.ef_search={ef_search}, "
          f"hnsw.iterative_scan={iterative}\n")  # fmt: skip
    hnsw, exact = "content arm, HNSW", "content arm, exact scan"
    rows = [("bank", lambda n: banks[n].slug)]
    for part in ("entries", "embeddings"):
        cell = lambda n, p=part: f"{loads[n][p]:.1f}" if n in loads else "reused"  # noqa: E731
        rows.append((f"load: COPY {part} (s)", cell))
    for mode in ("vector", "vector+lexical", hnsw, exact):
        rows.append((f"{mode}: p50 / p95 / mean (ms)", lambda n, m=mode: fmt(results[n][m])))
    rows.append(("exact ÷ HNSW (p50)", lambda n: f"{results[n][exact]['p50'] / results[n][hnsw]['p50']:.1f}×"))  # fmt: skip
    rows.append(("recall@8 of the HNSW content arm", lambda n: f"{results[n]['recall']:.3f}"))
    print("| figure | " + " | ".join(f"N = {n:,}" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for label, cell in rows:
        print(f"| {label} | " + " | ".join(cell(n) for n in sizes) + " |")
    built = f"{build_s:.1f}" if build_s is not None else "not rebuilt (indexes were present)"
    print(f"\n| figure | value |\n|---|---|\n| HNSW build, 3 indexes, whole table (s) | {built} |")
    print(f"| rows under the shared HNSW indexes (all banks) | {table_rows:,} |")
    if emb:
        print(f"| MiniLM model load (s) | {emb['load']:.2f} |")
        print(f"| MiniLM 1,000 short texts, batches of 64 (s) | {emb['batch']:.2f} |")
        print(f"| MiniLM throughput (texts/s) | {emb['rate']:.0f} |")
        print(f"| MiniLM one query text p50 / p95 / mean (ms) | {fmt(emb['single'])} |")


if __name__ == "__main__":
    main()
