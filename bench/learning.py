"""A learning with three connections, end to end (issue 24): ``POST /api/v1/banks/{bank}/entries``
through the whole Django/DRF stack in-process (APIClient, no socket), with the real model.

Ways of writing, request by request in turn so the box's load falls on all alike:

- ``one pass``: today's view. The guard's text and the entry's three search texts are embedded
  in one forward pass; the guard, the duplicate check, the entry's stored vectors and the
  write feedback read it (``kb.services.write_pass.one_forward_pass``). The pass runs in a
  thread while the entry and its connections are written, in three stages (one model call
  each: the content text, the guard's, the other two), each read as soon as it lands.
- ``in turn`` (``--modes``): the same pass computed before the write goes on (the model and the
  statements take turns, as before the overlap).
- ``before, eager`` / ``before, broker`` (``--modes``): the same request with the pass switched
  off, as the view ran before it: the guard, the duplicate check and the feedback each embed,
  and the entry's vectors are computed by the embedding task after commit, inside the request
  (``eager``, no broker) or left to a worker (``broker``).
- ``--before DIR``: the same request served by the code of another checkout (e.g. ``git
  worktree add /tmp/base <commit>``) in a second process on the same database, bank and
  model, taking turns with this checkout's request by request: the side-by-side figure of a
  change to the write path.

``--runtimes`` (default ``onnx``) repeats each way on each runtime. Every body is a new learning
(a Debian package's description turned into a lesson) with three noted connections to entries
of the bank; each bank (``bench-learning-<n>``, one per ``--entries`` size) holds ``n``
entries with real vectors, so the duplicate check and the feedback search run against stored
vectors (a bank past a few hundred entries is imported set-wise and embedded in batches once,
then reused). Each way counts the model calls and the
SQL statements it made per request.

    .venv/bin/python bench/learning.py [--requests 40] [--entries 120,10000] [--before /tmp/base]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BULK_FROM = 500  # banks at least this large are imported set-wise, not entry by entry


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40, help="Requests per way and bank.")
    parser.add_argument("--entries", default="300", help="Bank sizes, comma-separated.")
    parser.add_argument("--runtimes", default="onnx")
    parser.add_argument(
        "--modes",
        default=None,
        help="Ways of this checkout, comma-separated among 'one pass', 'in turn', "
        "'before eager', 'before broker' (default: all but 'in turn', or only 'one pass' with "
        "--before).",
    )
    parser.add_argument(
        "--before", type=Path, default=None, help="A checkout of the code to compare with."
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="Model threads (1, as a web process has)."
    )
    parser.add_argument(
        "--statements", action="store_true", help="Also print the SQL time per statement."
    )
    parser.add_argument(
        "--bank-indexes",
        action="store_true",
        help="Give each bank its own HNSW indexes for the run (as a bank past "
        "KB_BANK_VECTOR_INDEX_AT has them), dropped after.",
    )
    parser.add_argument("--serve", type=Path, default=None, help=argparse.SUPPRESS)
    return parser.parse_args()


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]


def setup_django(code: Path, threads: int) -> None:
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["KB_ONNX_THREADS"] = str(threads)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(code))
    import django

    django.setup()
    import logging

    from django.conf import settings

    logging.getLogger("config.serving.request").setLevel(logging.WARNING)
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    settings.KB_RATE_LIMIT_PER_MINUTE = settings.KB_RATE_LIMIT_WRITES_PER_MINUTE = 0


def bank_slug(n: int) -> str:
    return f"bench-learning-{n}"


def prepare_bank(slug: str, descriptions: list[str]):
    """The bench bank with one entry per description and real vectors (created once)."""
    from kb.models import Entry
    from kb.services.banks import ensure_bank
    from kb.services.embedding import embed_in_batches
    from kb.services.entries import clean_entry_data, create_entry

    bank, _ = ensure_bank(slug)
    have = Entry.objects.filter(bank=bank).count()
    missing = descriptions[have:]
    lines = [
        {"title": f"Package note {i}: {text[:80]}", "content": text, "kind": "fact"}
        for i, text in enumerate(missing, start=have)
    ]
    if len(lines) >= BULK_FROM:
        from kb.services.bulk import import_bank

        started = time.perf_counter()
        text = "\n".join(json.dumps({"type": "entry", **line}) for line in lines)
        import_bank(bank, text, actor="bench", embed=False)
        print(f"imported {len(lines)} entries in {time.perf_counter() - started:.1f}s", flush=True)
    else:
        for line in lines:
            data = clean_entry_data(bank, {**line, "lifetime": {"durable": True}})
            create_entry(bank, data, allow_duplicate=True)
    todo = list(
        Entry.objects.filter(bank=bank, embedding__isnull=True).values_list("pk", flat=True)
    )
    if todo:
        started = time.perf_counter()

        def progress(done: int, total: int) -> None:
            if done == total or done % 2048 == 0:
                print(f"  embedded {done}/{total}", flush=True)

        embed_in_batches(todo, progress=progress)
        print(f"embedded {len(todo)} entries in {time.perf_counter() - started:.1f}s", flush=True)
    ids = Entry.objects.filter(bank=bank).order_by("pk").values_list("short_id", flat=True)
    return bank, list(ids)[: len(descriptions)]


def learning(i: int, text: str, targets: list[str]) -> dict:
    words = text.split()
    subject = " ".join(words[:6])
    return {
        "title": f"Pin {subject} before upgrading the build image ({i})",
        "content": f"Upgrading {subject} without pinning its version breaks the nightly build, "
        f"because the new release changes its defaults ({' '.join(words[6:20])}). Pin the "
        "version in the image and upgrade it on its own, after reading the changelog.",
        "useful_for": f"upgrading the build image that ships {subject}",
        "systems": ["build image", "ci"],
        "kind": "gotcha",
        "lifetime": {"durable": True},
        "connections": [
            {"id": t, "relation": "see_also", "note": f"Read before step {n} of the upgrade."}
            for n, t in enumerate(targets, start=1)
        ],
    }


class Counters:
    """Counts the real model's calls (any runtime) and the SQL statements while installed."""

    def __init__(self):
        from django.db import connection

        from kb.services.embedding import MiniLMEmbedder

        self.calls = 0
        self.statements = 0
        self.sql_seconds = 0.0
        self.each: list[tuple[str, float]] = []  # (statement, seconds) of the current request
        original = MiniLMEmbedder.embed
        counter = self

        def counting(embedder, texts):
            counter.calls += 1
            return original(embedder, texts)

        def timing(execute, sql, params, many, context):
            started = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                counter.statements += 1
                counter.sql_seconds += time.perf_counter() - started
                counter.each.append((sql, time.perf_counter() - started))

        MiniLMEmbedder.embed = counting
        connection.execute_wrappers.append(timing)

    def snapshot(self) -> tuple[int, int, float]:
        return self.calls, self.statements, self.sql_seconds


@contextlib.contextmanager
def mode(name: str):
    """Switch the view to ``name``: the one pass, or the flow before it (eager or broker).
    ``one pass`` is the code as it is (nothing imported: an older checkout serving
    ``--before`` may lay its modules out otherwise)."""
    if name == "one pass":
        yield
        return
    from graph.actions import entries as views  # where a learning opens its one model pass
    from kb.tasks import embed_entries_task

    saved = (views.one_forward_pass, embed_entries_task.delay)
    if name == "in turn":
        views.one_forward_pass = lambda texts, **_: saved[0](texts, background=False)
    elif name != "one pass":
        views.one_forward_pass = lambda texts, **_: contextlib.nullcontext()
    if name == "before broker":
        embed_entries_task.delay = lambda *args, **kwargs: None
    try:
        yield
    finally:
        views.one_forward_pass, embed_entries_task.delay = saved


def post_learning(client, counters: Counters, url: str, body: dict, runtime: str, name: str):
    """One timed request: (ms, status, model calls, statements, SQL ms)."""
    from django.conf import settings

    from kb.services import embedding

    settings.KB_EMBEDDING_RUNTIME = runtime
    embedding._QUERY_CACHE.clear()
    calls, statements, sql = counters.snapshot()
    counters.each = []
    with mode(name):
        started = time.perf_counter()
        response = client.post(url, body, format="json")
        elapsed = (time.perf_counter() - started) * 1000
    after = counters.snapshot()
    return {
        "ms": elapsed,
        "status": response.status_code,
        "calls": after[0] - calls,
        "statements": after[1] - statements,
        "sql_ms": (after[2] - sql) * 1000,
        "each": [(statement_label(q), seconds * 1000) for q, seconds in counters.each],
    }


def statement_label(sql: str) -> str:
    """A statement of the write, named by what it does."""
    s = " ".join(sql.split())
    if "<=>" in s:
        return "nearest entries (duplicate check, feedback)"
    if "regexp_replace" in s:
        return "same-text check"
    if s.startswith(("SAVEPOINT", "RELEASE SAVEPOINT")):
        return s.split(' "')[0]
    if "FOR SHARE" in s:
        return "lock entries" if s.startswith("SELECT id, status") else "targets, read and locked"
    match = re.search(r'(?:FROM|INTO|UPDATE) "?((?:kb|graph)_\w+)', s)
    return f"{s.split()[0]} {match[1] if match else s[:40]}"


def warm_runtimes(runtimes: list[str]) -> None:
    from django.conf import settings

    from kb.services.embedding import get_embedder

    for runtime in runtimes:  # load each runtime before timing
        settings.KB_EMBEDDING_RUNTIME = runtime
        get_embedder().embed(["warm up"])
        used = get_embedder().runtime
        if used != runtime:
            raise SystemExit(f"{runtime} asked, {used} loaded: run manage.py export_onnx_model")


def serve(code: Path, threads: int, runtimes: list[str]) -> None:
    """The ``--before`` side: POST the bodies read from stdin (one JSON object a line) with
    the code of ``code``, answer each with its timing on stdout."""
    setup_django(code, threads)
    from rest_framework.test import APIClient

    warm_runtimes(runtimes)
    counters = Counters()
    clients: dict[str, APIClient] = {}
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        ask = json.loads(line)
        client = clients.get(ask["token"])
        if client is None:
            client = clients[ask["token"]] = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {ask['token']}")
        result = post_learning(
            client, counters, ask["url"], ask["body"], ask["runtime"], "one pass"
        )
        print(json.dumps(result), flush=True)


class Before:
    """The ``--before`` checkout's process, on this checkout's database."""

    def __init__(self, code: Path, threads: int, runtimes: list[str]):
        from config.pgembedded import server

        env = dict(os.environ)
        env.setdefault("KB_PGDATA", str(server.DATA_DIR))
        env.setdefault("KB_RUNDIR", str(server.RUN_DIR))
        args = ["--serve", str(code), "--threads", str(threads), "--runtimes", ",".join(runtimes)]
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "learning.py"), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=str(code),
            env=env,
        )
        self.read()

    def read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit("the --before process ended (see its error above)")
        return json.loads(line)

    def post(self, token: str, url: str, body: dict, runtime: str) -> dict:
        ask = {"token": token, "url": url, "body": body, "runtime": runtime}
        self.process.stdin.write(json.dumps(ask) + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def run_ways(ways, bodies, post) -> dict:
    results = {way: [] for way in ways}
    for i, body in enumerate(bodies):
        way = ways[i % len(ways)]
        results[way].append(post(way, body))
    return results


def print_table(results: dict) -> None:
    print(
        "| POST a learning with 3 connections | runtime | p50 (ms) | p95 (ms) | model calls "
        "per request | statements per request | SQL p50 (ms) | statuses |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for (side, name, runtime), rows in results.items():
        ms = [r["ms"] for r in rows]
        status = [r["status"] for r in rows]
        statuses = ", ".join(f"{s}×{status.count(s)}" for s in sorted(set(status)))
        calls = sum(r["calls"] for r in rows) / len(rows)
        statements = sum(r["statements"] for r in rows) / len(rows)
        sql = statistics.median(r["sql_ms"] for r in rows)
        label = f"{side}: {name}" if side == "before" else name
        print(
            f"| {label} | {runtime} | {statistics.median(ms):.1f} | {pct(ms, 0.95):.1f}"
            f" | {calls:.1f} | {statements:.1f} | {sql:.1f} | {statuses} |"
        )


def same_text_cost(bank, titles: list[str]) -> tuple[float, float]:
    """The same-text check's p50 (ms) with the title-letters index and without it (dropped
    inside a transaction that is rolled back): the ``--before`` process shares this database,
    so it runs with the index too."""
    from django.db import connection, transaction

    from kb.services.duplicates import _same_text

    def timed() -> float:
        times = []
        for title in titles:
            started = time.perf_counter()
            _same_text(bank, title, "")
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times)

    with_index = timed()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX entry_title_letters")
        without = timed()
        transaction.set_rollback(True)
    return with_index, without


def print_statements(results: dict) -> None:
    """Median milliseconds per statement of the write, per way (summed when a way runs one
    statement several times in a request)."""
    for (side, name, runtime), rows in results.items():
        per: dict[str, list[float]] = {}
        for row in rows:
            summed: dict[str, float] = {}
            for label, ms in row.get("each", []):
                summed[label] = summed.get(label, 0.0) + ms
            for label, ms in summed.items():
                per.setdefault(label, []).append(ms)
        print(f"\n{side}: {name} ({runtime}), SQL per request by statement (p50 ms, count):")
        for label, values in sorted(per.items(), key=lambda kv: -statistics.median(kv[1])):
            count = sum(1 for r in rows for lab, _ in r.get("each", []) if lab == label)
            print(f"  {statistics.median(values):7.1f}  {count / len(rows):4.1f}×  {label}")


def main() -> None:
    args = parse_args()
    runtimes = [r.strip() for r in args.runtimes.split(",") if r.strip()]
    if args.serve:
        serve(args.serve, args.threads, runtimes)
        return
    setup_django(HERE.parent, args.threads)
    sys.path.insert(0, str(HERE))
    import bank_vectors
    import search as search_bench
    from rest_framework.test import APIClient

    from kb.services.tokens import create_token
    from kb.services.vector_index import drop_bank_vector_indexes, ensure_bank_vector_indexes

    default = "one pass" if args.before else "one pass,before eager,before broker"
    names = [m.strip().replace(",", "") for m in (args.modes or default).split(",") if m.strip()]
    ways = [("now", m, r) for r in runtimes for m in names]
    before = None
    if args.before:
        ways += [("before", "one pass", r) for r in runtimes]
        before = Before(args.before.resolve(), args.threads, runtimes)
    sizes = [int(n) for n in args.entries.split(",") if n.strip()]
    texts = bank_vectors.descriptions(max(sizes) + NEW_TEXTS)
    warm_runtimes(runtimes)
    counters = Counters()
    rng = np.random.default_rng(3)
    own_indexes = []
    try:
        for size in sizes:
            bank, ids = prepare_bank(bank_slug(size), texts[:size])
            if args.bank_indexes:
                own_indexes.append(bank)
                ensure_bank_vector_indexes(bank, force=True, concurrently=False)
            _, raw = create_token(f"bench-learning-{time.time_ns()}", [bank], "read,write")
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
            url = f"/api/v1/banks/{bank.slug}/entries"

            def post(way, body, raw=raw, client=client, url=url):
                side, name, runtime = way
                if side == "before":
                    return before.post(raw, url, body, runtime)
                return post_learning(client, counters, url, body, runtime, name)

            bodies = new_learnings(bank, ids, texts[max(sizes) :], args.requests, ways, rng)
            run_ways(ways, bodies[: len(ways)], post)  # warm: plans, caches
            results = run_ways(ways, bodies[len(ways) :], post)
            print(f"\nMachine: {search_bench.machine()}; load average {os.getloadavg()}")
            own = "its own HNSW indexes" if args.bank_indexes else "no index of its own"
            print(
                f"bank {bank.slug}: {size} entries with vectors, {own}; model threads {args.threads}\n"
            )
            print_table(results)
            if args.statements:
                print_statements(results)
                titles = [body["title"] for body in bodies[:20]]
                indexed, scanned = same_text_cost(bank, titles)
                print(
                    f"\nsame-text check p50: {indexed:.1f} ms with the title-letters index, "
                    f"{scanned:.1f} ms without it (the --before process runs with it too)"
                )
    finally:
        if before is not None:
            before.close()
        for bank in own_indexes:
            drop_bank_vector_indexes(bank.pk)


NEW_TEXTS = 20_000


def new_learnings(bank, ids: list[str], pool: list[str], requests: int, ways, rng) -> list[dict]:
    """Bodies never written before: the bank's learnings of earlier runs are skipped in
    ``pool`` (texts no bank entry was made from)."""
    from kb.models import Entry

    start = Entry.objects.filter(bank=bank).count() - len(ids)
    return [
        learning(i, pool[(start + i) % len(pool)], [ids[j] for j in rng.choice(len(ids), 3, False)])
        for i in range((requests + 1) * len(ways))
    ]


if __name__ == "__main__":
    main()
