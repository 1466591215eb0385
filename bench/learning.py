"""A learning with three connections, end to end (issue 24): ``POST /api/v1/banks/{bank}/entries``
through the whole Django/DRF stack in-process (APIClient, no socket), with the real model.

Three ways of writing, request by request in turn so the box's load falls on all alike:

- ``one pass``: today's view. The guard's text and the entry's three search texts are embedded
  in one forward pass; the guard, the duplicate check, the entry's stored vectors and the
  write feedback read it (``kb.services.embedding.one_forward_pass``).
- ``before, eager``: the same request with the pass switched off, as the view ran before:
  the guard, the duplicate check and the feedback each embed, and the entry's vectors are
  computed by the embedding task after commit, which runs inside the request when there is no
  broker (tests, ``manage.py``, a ``make run`` without Redis).
- ``before, broker``: as ``before, eager`` but the embedding task is queued, not run (a worker
  would compute the vectors later): what a web request paid with a broker.

``--runtimes`` (default ``onnx,torch``) repeats the two "before" modes on each runtime: torch is
the runtime before this round. Every body is a new learning (a Debian package's description
turned into a lesson) with three noted connections to entries of the bank; the bank
(``bench-learning``) holds ``--entries`` entries with real vectors, so the duplicate check and
the feedback search run against stored vectors. Each mode counts the model calls it made.

    .venv/bin/python bench/learning.py [--requests 40] [--entries 300] [--runtimes onnx,torch]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40, help="Requests per mode.")
    parser.add_argument("--entries", type=int, default=300)
    parser.add_argument("--runtimes", default="onnx,torch")
    parser.add_argument(
        "--threads", type=int, default=1, help="Model threads (1, as a web process has)."
    )
    return parser.parse_args()


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]


def prepare_bank(descriptions: list[str]):
    """The bench bank with one entry per description and real vectors (created once)."""
    from kb.models import Entry
    from kb.services.banks import ensure_bank
    from kb.services.embedding import embed_entries
    from kb.services.entries import clean_entry_data, create_entry

    bank, _ = ensure_bank("bench-learning")
    have = Entry.objects.filter(bank=bank).count()
    for i, text in enumerate(descriptions[have:], start=have):
        data = {"title": f"Package note {i}: {text[:80]}", "content": text, "kind": "fact"}
        data["lifetime"] = {"durable": True}
        create_entry(bank, clean_entry_data(bank, data), allow_duplicate=True)
    started = time.perf_counter()
    written = embed_entries(Entry.objects.filter(bank=bank))
    if written:
        print(f"embedded {written} entries in {time.perf_counter() - started:.1f}s", flush=True)
    return bank, list(Entry.objects.filter(bank=bank).values_list("short_id", flat=True))


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


class ModelCalls:
    """Counts the real model's calls (any runtime) while installed."""

    def __init__(self):
        from kb.services.embedding import MiniLMEmbedder

        self.count = 0
        self.original = MiniLMEmbedder.embed
        counter = self

        def counting(embedder, texts):
            counter.count += 1
            return counter.original(embedder, texts)

        MiniLMEmbedder.embed = counting


@contextlib.contextmanager
def mode(name: str):
    """Switch the view to ``name``: the one pass, or the flow before it (eager or broker)."""
    from graph.actions import entries as views  # where a learning opens its one model pass
    from kb.tasks import embed_entries_task

    saved = (views.one_forward_pass, embed_entries_task.delay)
    if name != "one pass":
        views.one_forward_pass = lambda texts: contextlib.nullcontext()
    if name == "before, broker":
        embed_entries_task.delay = lambda *args, **kwargs: None
    try:
        yield
    finally:
        views.one_forward_pass, embed_entries_task.delay = saved


def run_modes(client, bank, modes, bodies, calls: ModelCalls) -> dict:
    from django.conf import settings

    from kb.services import embedding

    results = {m: {"ms": [], "status": [], "calls": 0} for m in modes}
    url = f"/api/v1/banks/{bank.slug}/entries"
    for i, body in enumerate(bodies):
        name, runtime = modes[i % len(modes)]
        settings.KB_EMBEDDING_RUNTIME = runtime
        embedding._QUERY_CACHE.clear()
        before = calls.count
        with mode(name):
            started = time.perf_counter()
            response = client.post(url, body, format="json")
            elapsed = (time.perf_counter() - started) * 1000
        result = results[(name, runtime)]
        result["ms"].append(elapsed)
        result["status"].append(response.status_code)
        result["calls"] += calls.count - before
    return results


def main() -> None:
    args = parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ["KB_ONNX_THREADS"] = str(args.threads)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import logging

    logging.getLogger("config.serving.request").setLevel(logging.WARNING)
    import bank_vectors
    import search as search_bench
    from django.conf import settings
    from rest_framework.test import APIClient

    from kb.services.embedding import get_embedder
    from kb.services.tokens import create_token

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    settings.KB_RATE_LIMIT_PER_MINUTE = settings.KB_RATE_LIMIT_WRITES_PER_MINUTE = 0
    runtimes = [r.strip() for r in args.runtimes.split(",") if r.strip()]
    modes = [("one pass", runtimes[0])]
    modes += [(m, r) for r in runtimes for m in ("before, eager", "before, broker")]
    needed = (args.requests + 1) * len(modes)
    texts = bank_vectors.descriptions(args.entries + needed + 5000)
    bank, ids = prepare_bank(texts[: args.entries])
    _, raw = create_token("bench-learning", [bank], "read,write")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    for runtime in runtimes:  # load each runtime before timing
        settings.KB_EMBEDDING_RUNTIME = runtime
        get_embedder().embed(["warm up"])
        used = get_embedder().runtime
        if used != runtime:
            raise SystemExit(f"{runtime} asked, {used} loaded: run manage.py export_onnx_model")
    rng = np.random.default_rng(3)
    pool = texts[len(ids) :]  # past every learning an earlier run wrote: new ones each run
    bodies = [
        learning(i, pool[i], [ids[j] for j in rng.choice(len(ids), 3, replace=False)])
        for i in range((args.requests + 1) * len(modes))
    ]
    calls = ModelCalls()
    run_modes(client, bank, modes, bodies[: len(modes)], calls)  # warm: plans, caches
    results = run_modes(client, bank, modes, bodies[len(modes) :], calls)
    print(f"\nMachine: {search_bench.machine()}; load average {os.getloadavg()}")
    print(f"bank {bank.slug}: {len(ids)} entries with vectors; model threads {args.threads}\n")
    print(
        "| POST a learning with 3 connections | runtime | p50 (ms) | p95 (ms) | model calls "
        "per request | statuses |"
    )
    print("|---|---|---|---|---|---|")
    for (name, runtime), r in results.items():
        statuses = ", ".join(f"{s}×{r['status'].count(s)}" for s in sorted(set(r["status"])))
        print(
            f"| {name} | {runtime} | {statistics.median(r['ms']):.1f} | {pct(r['ms'], 0.95):.1f}"
            f" | {r['calls'] / len(r['ms']):.1f} | {statuses} |"
        )


if __name__ == "__main__":
    main()
