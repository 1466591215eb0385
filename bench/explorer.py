"""The graph explorer at 1k and 10k entries: layout job, graph endpoint latency, first paint.

Banks ``bench-explorer-<N>`` are clustered graphs (a random partition graph: clusters of 5–150
entries, ~3 edges per entry inside a cluster, ~0.3 across, seed 5) plus 10% lone entries, written
with ``bulk_create`` (no history: a benchmark bank needs none); an existing bank of the right
size is reused. Measured per size:

1. ``refresh_layout`` (the Celery job's body): read, Louvain, 3D + 2D positions, store.
2. ``GET /api/v1/banks/<bank>/graph`` through Django's test client with a token: p50/p95 over
   ``--runs`` requests with a warm layout cache, and the response size.
3. First paint in headless Chromium (Debian's package, loopback only): from navigation to the
   page's ``ready`` flag (data fetched, graph drawn, fit), in 2D (canvas) and in 3D (SwiftShader
   software WebGL), median of ``--paints`` loads. Needs ``manage.py runserver`` on ``--port``;
   the script starts it itself and stops it at the end.

    .venv/bin/python bench/explorer.py [--sizes 1000,10000] [--runs 10] [--paints 3]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build_bank(n: int):
    import networkx as nx
    from django.db import transaction

    from graph.edges.vocab import edge_types_for_bank
    from graph.models import Edge
    from kb.models import Entry, EntryKind
    from kb.services.banks import ensure_bank

    bank, _ = ensure_bank(f"bench-explorer-{n}")
    if Entry.objects.filter(bank=bank).count() == n:
        return bank, False
    Edge.objects.filter(bank=bank).delete()
    Entry.objects.filter(bank=bank).delete()
    rng = random.Random(5)
    connected = int(n * 0.9)
    sizes = []
    while sum(sizes) < connected:
        sizes.append(min(connected - sum(sizes), int(5 + rng.paretovariate(1.3) * 8) % 150 + 5))
    mean_size = sum(sizes) / len(sizes)
    graph = nx.random_partition_graph(
        sizes, min(1.0, 3.0 / mean_size), 0.3 / connected, seed=5, directed=False
    )
    kinds = list(EntryKind.objects.filter(bank=None, name__in=["fact", "gotcha", "recipe"]))
    types = edge_types_for_bank(bank)
    relations = [types[r] for r in ("see_also", "cites", "part_of", "corrects", "clarifies")]
    with transaction.atomic():
        entries = Entry.objects.bulk_create(
            [
                Entry(
                    bank=bank,
                    kind=rng.choice(kinds),
                    short_id=f"{i:08x}",
                    title=f"Entry {i} of cluster {graph.nodes[i]['block'] if i < connected else '-'}",
                )
                for i in range(n)
            ],
            batch_size=5000,
        )
        Edge.objects.bulk_create(
            [
                Edge(
                    bank=bank,
                    from_entry=entries[a],
                    to_entry=entries[b],
                    type=rng.choice(relations),
                    note="" if rng.random() < 0.6 else "How the other entry pertains.",
                    source="author" if rng.random() < 0.7 else "citation_backfill",
                )
                for a, b in graph.edges()
            ],
            batch_size=5000,
        )
    return bank, True


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def endpoint_latency(bank, runs: int) -> dict:
    from rest_framework.test import APIClient

    from kb.services.tokens import create_token

    _, raw = create_token("bench-explorer", [bank], "read")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    url = f"/api/v1/banks/{bank.slug}/graph"
    first = client.get(url)
    assert first.status_code == 200, first.content[:300]
    times, cpu = [], []
    for _ in range(runs):
        started, cpu_started = time.perf_counter(), time.process_time()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - cpu_started) * 1000)
        assert response.json()["layout"]["status"] == "ready"
    return {
        "p50": pct(times, 0.5),
        "p95": pct(times, 0.95),
        "cpu_p50": pct(cpu, 0.5),
        "bytes": len(first.content),
    }


def first_paint(base: str, slug: str, paints: int) -> dict:
    from playwright.sync_api import sync_playwright

    args = [
        "--no-sandbox",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    modes = {
        "2d": args + ["--disable-gpu", "--disable-webgl", "--disable-3d-apis"],
        "3d": args + ["--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"],
    }
    out = {}
    with sync_playwright() as p:
        for mode, flags in modes.items():
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=flags)
            page = browser.new_page(viewport={"width": 1500, "height": 950})
            page.goto(f"{base}/admin/login/?next=/admin/")
            page.fill("#id_username", "bench-explorer")
            page.fill("#id_password", "bench-explorer-pw")
            page.click("input[type=submit]")
            page.wait_for_url(f"{base}/admin/")
            times = []
            drawn = None
            for _ in range(paints):
                started = time.perf_counter()
                page.goto(f"{base}/explorer/{slug}/")
                page.wait_for_selector("body[data-ready='true']", timeout=120_000)
                page.evaluate(
                    "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
                )
                times.append((time.perf_counter() - started) * 1000)
                drawn = page.evaluate("window.kbExplorer.state().mode")
            webgl = page.evaluate("window.kbExplorer.state().webgl")
            out[f"{mode} (drawn {drawn})"] = statistics.median(times)
            if mode == "3d" and webgl and drawn != "3d":
                # a bank above 5,000 entries starts in 2D: time the switch to the 3D drawing
                started = time.perf_counter()
                page.evaluate("window.kbExplorer.setMode('3d')")
                page.evaluate(
                    "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
                )
                out["switch to 3d"] = (time.perf_counter() - started) * 1000
            elif mode == "3d" and not webgl:
                out["3d unavailable (no WebGL)"] = 0.0
            browser.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--paints", type=int, default=3)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    os.environ["KB_EMBEDDER"] = "hashing"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.contrib.auth.models import User

    from graph.analytics.layout_store import refresh_layout

    user, _ = User.objects.get_or_create(username="bench-explorer", defaults={"is_staff": True})
    user.is_staff = user.is_superuser = True
    user.set_password("bench-explorer-pw")
    user.save()

    server = None
    base = f"http://127.0.0.1:{args.port}"
    if not args.no_browser:
        server = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "runserver",
                "--noreload",
                "--insecure",
                f"127.0.0.1:{args.port}",
            ],
            cwd=ROOT,
            env={**os.environ, "KB_EMBEDDER": "hashing"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/admin/login/", timeout=1)
                break
            except Exception:
                time.sleep(0.3)
    try:
        print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(
            f"{'entries':>8} {'edges':>7} {'layout job (wall/cpu)':>22} {'clusters':>8} "
            f"{'GET p50':>8} {'GET p95':>8} {'cpu p50':>8} {'payload':>9}  first paint (median ms)"
        )
        for size in [int(s) for s in args.sizes.split(",")]:
            bank, built = build_bank(size)
            cpu = time.process_time()
            job = refresh_layout(bank)
            job_cpu = (time.process_time() - cpu) * 1000
            latency = endpoint_latency(bank, args.runs)
            paint = {} if args.no_browser else first_paint(base, bank.slug, args.paints)
            paints = ", ".join(f"{k} {v:.0f}" for k, v in paint.items())
            print(
                f"{size:>8} {job.edges:>7} {job.took_ms:>12.0f}/{job_cpu:.0f}ms {job.clusters:>8} "
                f"{latency['p50']:>6.0f}ms {latency['p95']:>6.0f}ms {latency['cpu_p50']:>6.0f}ms "
                f"{latency['bytes'] / 1024:>7.0f}kB  {paints}",
                flush=True,
            )
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
