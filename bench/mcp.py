"""MCP benchmark: latency of ``query_knowledge_bank`` over MCP against the same REST query,
measured in one run on one live server.

It seeds a bank ``bench-mcp`` in the embedded database (300 entries, reused when present),
starts ``uvicorn config.asgi:application`` on a free loopback port (one process, as ``make
run`` would serve REST and /mcp together) and a stdio server (``manage.py mcp``), then sends
the same query bodies alternately as REST ``POST /query`` (one keep-alive HTTP client), as an
MCP tool call over streamable HTTP and as an MCP tool call over stdio (the SDK's own client for
both). It prints p50/p95 of each and the MCP overhead against REST. The ``hashing`` embedder is
used on both sides so the model's time does not drown the transport's.

    .venv/bin/python bench/mcp.py [--queries 150] [--warmup 15]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# This file is named mcp.py: keep its folder off the path so `import mcp` finds the SDK.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ["KB_EMBEDDER"] = "hashing"

WORDS = (
    "login deploy retry payments ledger csrf cookie playwright gateway timeout cache invoice "
    "refund export report queue worker migration schema token scope bank alias merge"
).split()
QUERIES = [
    "how do I log in to production with playwright",
    "why do payment retries fail after a gateway timeout",
    "which migration changed the ledger schema",
    "refund export report for finance",
    "queue worker stuck on csrf cookie",
]


def seed(bank_slug: str, count: int) -> tuple[str, int]:
    import django

    django.setup()
    from kb.models import Bank, Entry
    from kb.services.entries import clean_entry_data, create_entry
    from kb.services.tokens import create_token

    bank, _ = Bank.objects.get_or_create(slug=bank_slug, defaults={"name": "MCP benchmark"})
    have = Entry.objects.filter(bank=bank).count()
    for i in range(have, count):
        words = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(12)]
        data = {
            "title": f"Note {i}: {' '.join(words[:5])}",
            "content": " ".join(words) + f". Detail number {i}.",
            "useful_for": f"Use when working on {words[0]} and {words[1]}.",
            "lifetime": {"durable": True},
        }
        create_entry(bank, clean_entry_data(bank, data), allow_duplicate=True)
    _, raw = create_token(f"bench-mcp-{int(time.time())}", [bank], "read")
    return raw, Entry.objects.filter(bank=bank).count()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("uvicorn did not start") from None
            time.sleep(0.3)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def measure(base: str, raw: str, bank: str, queries: int, warmup: int) -> dict:
    import httpx2
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {raw}"}
    timeout = httpx2.Timeout(30, read=300)
    times: dict[str, list[float]] = {"rest": [], "mcp_http": [], "mcp_stdio": [], "service": []}
    stdio = StdioServerParameters(
        command=sys.executable,
        args=[str(ROOT / "manage.py"), "mcp", "--token", raw],
        cwd=str(ROOT),
        env={"KB_EMBEDDER": "hashing", "DJANGO_SETTINGS_MODULE": "config.settings"},
    )
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as rest,
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as over_http,
        Client(stdio) as over_stdio,
    ):
        for i in range(warmup + queries):
            body = {"query": QUERIES[i % len(QUERIES)], "limit": 8, "bank": bank}
            rest_body = {k: v for k, v in body.items() if k != "bank"}
            started = time.perf_counter()
            response = await rest.post(f"{base}/api/v1/banks/{bank}/query", json=rest_body)
            rest_ms = (time.perf_counter() - started) * 1000
            assert response.status_code == 200, response.text
            started = time.perf_counter()
            result = await over_http.call_tool("query_knowledge_bank", body)
            http_ms = (time.perf_counter() - started) * 1000
            assert not result.is_error, result.content
            started = time.perf_counter()
            result = await over_stdio.call_tool("query_knowledge_bank", body)
            stdio_ms = (time.perf_counter() - started) * 1000
            assert not result.is_error, result.content
            if i >= warmup:
                times["service"].append(response.json()["stats"]["took_ms"])
                times["rest"].append(rest_ms)
                times["mcp_http"].append(http_ms)
                times["mcp_stdio"].append(stdio_ms)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--warmup", type=int, default=15)
    parser.add_argument("--entries", type=int, default=300)
    args = parser.parse_args()

    import anyio

    bank = "bench-mcp"
    raw, entries = seed(bank, args.entries)
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "config.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env={**os.environ, "KB_EMBEDDER": "hashing"},
    )
    try:
        wait_for(port, server)
        times = anyio.run(measure, f"http://127.0.0.1:{port}", raw, bank, args.queries, args.warmup)
    finally:
        server.terminate()
        server.wait(timeout=30)

    print(
        f"bank {bank}: {entries} entries; {args.queries} queries per path after {args.warmup} warm-up"
    )
    print(f"{'path':<22}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}")
    for name, label in [
        ("service", "query service alone"),
        ("rest", "REST POST /query"),
        ("mcp_http", "MCP streamable HTTP"),
        ("mcp_stdio", "MCP stdio"),
    ]:
        values = times[name]
        print(
            f"{label:<22}{pct(values, 0.5):9.1f}{pct(values, 0.95):9.1f}{statistics.mean(values):9.1f}"
        )
    rest50 = pct(times["rest"], 0.5)
    for name in ("mcp_http", "mcp_stdio"):
        p50 = pct(times[name], 0.5)
        print(f"{name} overhead at p50: {p50 - rest50:+.1f} ms (x{p50 / rest50:.2f} of REST)")


if __name__ == "__main__":
    main()
