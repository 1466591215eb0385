"""Load: concurrent agents against a running server, next to one agent alone.

Each agent is a loop of real API calls for ``--duration`` seconds: query 70 %, traverse 15 %,
learning with a connection 10 %, merge then revert 5 %. The run counts every answer that is
not the expected one as an error (a 5xx, a timeout, a refused connection, or a 4xx), prints
throughput and p50/p95/p99 latency for one agent and for ``--agents`` agents side by side, and
then checks that no acknowledged write was lost: every entry answered 201 exists, every edge
it was answered with is current, and every merge that was reverted left both entries live.

Setup (when no ``--token`` is given): a bank ``loadbench`` holding a copy of the demo
engineering bank, and a token for it, written straight into the database of this checkout
(the one ``make run`` serves). Loopback addresses only; it stops by itself.

All agents share the one token, so the server's per-token rate limits (600 requests and 120
writes a minute by default) cap the whole crowd at 10 requests/s: measure capacity against a
server started with ``KB_RATE_LIMIT_PER_MINUTE=0 KB_RATE_LIMIT_WRITES_PER_MINUTE=0``; with the
limits on, the run shows them answering 429 with ``Retry-After`` instead.

    make run                      # in one terminal
    .venv/bin/python bench/load.py [--url http://127.0.0.1:8000] [--duration 60] [--agents 16]
                                   [--solo-duration 30] [--token T --bank SLUG]
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import os
import random
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUERIES = [
    "how do I log in to production with playwright",
    "payments retry policy after a card decline",
    "who owns the settlement connector",
    "rotate database credentials",
    "on-call runbook for a stuck queue",
    "csrf mismatch on login",
    "release checklist for the mobile app",
    "why did the nightly export fail",
    "feature flag naming convention",
    "how to roll back a bad deploy",
    "rate limits of the carrier api",
    "where are invoices generated",
]
TRAVERSE_RELATIONS = ["see_also", "cites", "part_of", "derived_from", "corrects", "owned_by"]
MIX = (("query", 0.70), ("traverse", 0.15), ("learning", 0.10), ("merge_revert", 0.05))


@dataclass
class Ledger:
    """What the server acknowledged, to be found again after the run."""

    entries: list[str] = field(default_factory=list)
    edges: list[tuple[str, int]] = field(default_factory=list)  # (entry id, edge id)
    reverted_merges: list[tuple[str, str]] = field(default_factory=list)  # (keep, away)


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    error_samples: list[str] = field(default_factory=list)
    requests: int = 0
    elapsed: float = 0.0

    def record(self, op: str, seconds: float) -> None:
        self.latencies.setdefault(op, []).append(seconds)
        self.requests += 1

    def error(self, op: str, what: str) -> None:
        key = f"{op}: {what.split(' ', 1)[0]}"
        self.errors[key] = self.errors.get(key, 0) + 1
        self.requests += 1
        if len(self.error_samples) < 8:
            self.error_samples.append(f"{op}: {what}"[:300])


class Expected(Exception):
    pass


def assert_loopback(url: str) -> None:
    host = urlparse(url).hostname or ""
    address = ipaddress.ip_address(socket.gethostbyname(host))
    if not address.is_loopback:
        raise SystemExit(f"{url} is not a loopback address; this load test targets loopback only.")


def setup_bank(slug: str) -> str:
    """The bank (a copy of the demo engineering bank, loaded once) and a fresh token."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from kb.management.commands.load_demo import DEMO_DIR
    from kb.models import Bank, BankKind, Entry
    from kb.services.banks import ensure_bank
    from kb.services.bulk import import_bank
    from kb.services.embedding import embed_entries
    from kb.services.tokens import create_token

    bank, created = ensure_bank(slug, name="Load benchmark", kind=BankKind.ENGINEERING)
    if created or not Entry.objects.filter(bank=bank).exists():
        for name in ("engineering.jsonl", "engineering_edges.jsonl"):
            import_bank(bank, (DEMO_DIR / name).read_text(), reason=f"load bench {name}")
    embed_entries(Entry.objects.filter(bank=bank))
    _, raw = create_token(
        f"load-bench-{int(time.time())}", [Bank.objects.get(pk=bank.pk)], "read,write,curate"
    )
    return raw


def bank_entry_ids(url: str, token: str, slug: str) -> list[str]:
    """Ids to connect to and start walks from: what the queries find (and their neighbours)."""
    ids: dict[str, None] = {}
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        for query in QUERIES:
            response = client.post(f"/api/v1/banks/{slug}/query", json={"query": query})
            response.raise_for_status()
            for result in response.json()["results"]:
                ids[result["id"]] = None
                for item in result.get("related", []) + result.get("neighbors", []):
                    ids[item["id"]] = None
    return list(ids)


class Agent:
    def __init__(
        self,
        client: httpx.AsyncClient,
        bank: str,
        ids: list[str],
        seed: int,
        stats: Stats,
        ledger: Ledger,
    ):
        self.client = client
        self.base = f"/api/v1/banks/{bank}"
        self.ids = ids
        self.rng = random.Random(seed)
        self.seed = seed
        self.stats = stats
        self.ledger = ledger
        self.counter = 0

    async def call(self, op: str, method: str, path: str, expect: int, **kwargs) -> dict:
        started = time.perf_counter()
        try:
            response = await self.client.request(method, self.base + path, **kwargs)
        except httpx.HTTPError as exc:
            self.stats.error(op, f"{type(exc).__name__} {exc}")
            raise Expected from exc
        elapsed = time.perf_counter() - started
        if response.status_code != expect:
            self.stats.error(op, f"{response.status_code} {response.text[:200]}")
            raise Expected
        self.stats.record(op, elapsed)
        return response.json()

    def learning(self, topic: str) -> dict:
        self.counter += 1
        tag = f"{self.seed}-{self.counter}-{self.rng.randrange(10**9)}"
        return {
            "title": f"Load note {tag}: retry the {topic} call once after a 409",
            "content": f"When the {topic} endpoint answers 409 write_conflict, send the same "
            f"request again after the Retry-After delay; the first attempt wrote nothing. ({tag})",
            "useful_for": f"Use when a {topic} write answers 409 under concurrent edits.",
            "kind": "gotcha",
            "systems": ["load"],
            "tasks": ["retry writes"],
            "lifetime": {"durable": True},
        }

    async def step(self) -> None:
        roll, op = self.rng.random(), "query"
        for name, share in MIX:
            if roll < share:
                op = name
                break
            roll -= share
        try:
            if op == "query":
                body = {"query": self.rng.choice(QUERIES), "limit": 5}
                await self.call(op, "POST", "/query", 200, json=body)
            elif op == "traverse":
                body = {
                    "start": self.rng.choice(self.ids),
                    "relations": TRAVERSE_RELATIONS,
                    "direction": "both",
                    "max_depth": 2,
                    "max_expansions": 100,
                }
                await self.call(op, "POST", "/traverse", 200, json=body)
            elif op == "learning":
                body = self.learning(self.rng.choice(["payments", "exports", "login"]))
                body["connections"] = [
                    {
                        "id": self.rng.choice(self.ids),
                        "relation": "see_also",
                        "note": "The subsystem this retry advice applies to.",
                    }
                ]
                entry = await self.call(op, "POST", "/entries", 201, json=body)
                self.ledger.entries.append(entry["id"])
                for edge in entry.get("edges", []):
                    self.ledger.edges.append((entry["id"], edge["edge_id"]))
            else:
                keep = await self.call(op, "POST", "/entries", 201, json=self.learning("merge"))
                away = await self.call(op, "POST", "/entries", 201, json=self.learning("merge"))
                self.ledger.entries += [keep["id"], away["id"]]
                merged = await self.call(
                    op,
                    "POST",
                    "/merges",
                    201,
                    json={"keep": keep["id"], "away": away["id"], "reason": "load bench merge"},
                )
                await self.call(
                    op,
                    "POST",
                    f"/operations/{merged['operation']}/revert",
                    200,
                    json={"reason": "load bench revert"},
                )
                self.ledger.reverted_merges.append((keep["id"], away["id"]))
        except Expected:
            pass

    async def run(self, deadline: float, max_steps: int) -> None:
        for _ in range(max_steps):
            if time.monotonic() >= deadline:
                return
            await self.step()


async def run_phase(
    url: str,
    token: str,
    bank: str,
    ids: list[str],
    agents: int,
    duration: float,
    timeout: float,
    ledger: Ledger,
) -> Stats:
    stats = Stats()
    limits = httpx.Limits(max_connections=agents, max_keepalive_connections=agents)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=timeout, limits=limits
    ) as client:
        started = time.monotonic()
        deadline = started + duration
        workers = [Agent(client, bank, ids, seed, stats, ledger) for seed in range(agents)]
        await asyncio.gather(*(w.run(deadline, max_steps=100_000) for w in workers))
        stats.elapsed = time.monotonic() - started
    return stats


async def verify(url: str, token: str, bank: str, ledger: Ledger, timeout: float) -> dict:
    """Every acknowledged write is there: entries, their edges, reverted merges undone."""
    headers = {"Authorization": f"Bearer {token}"}
    lost: list[str] = []
    semaphore = asyncio.Semaphore(8)
    edges_by_entry: dict[str, set[int]] = {}
    for entry_id, edge_id in ledger.edges:
        edges_by_entry.setdefault(entry_id, set()).add(edge_id)
    away_ids = {away for _, away in ledger.reverted_merges}

    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=timeout) as client:

        async def check(entry_id: str) -> None:
            for _ in range(5):  # a rate-limited check waits as told, never counts as lost
                async with semaphore:
                    response = await client.get(f"/api/v1/banks/{bank}/entries/{entry_id}")
                if response.status_code != 429:
                    break
                await asyncio.sleep(float(response.headers.get("Retry-After", "5")))
            if response.status_code != 200:
                lost.append(f"entry {entry_id}: {response.status_code}")
                return
            body = response.json()
            if body["id"] != entry_id or body.get("status") != "live":
                lost.append(f"entry {entry_id}: now {body['id']} ({body.get('status')})")
            current = {edge["edge_id"] for edge in body.get("edges", [])}
            for edge_id in edges_by_entry.get(entry_id, ()):
                if edge_id not in current:
                    lost.append(f"edge {edge_id} of {entry_id}")
            if entry_id in away_ids and body.get("merged_from"):
                lost.append(f"merge of {entry_id} not reverted")

        await asyncio.gather(*(check(entry_id) for entry_id in dict.fromkeys(ledger.entries)))
    return {
        "entries": len(set(ledger.entries)),
        "edges": len(ledger.edges),
        "reverted_merges": len(ledger.reverted_merges),
        "lost": lost,
    }


def wait_ready(url: str, timeout: float = 300.0) -> httpx.Response:
    """The server's /readyz once it answers 200 (workers may still be loading the model)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            response = httpx.get(url + "/readyz", timeout=10)
            if response.status_code == 200 or time.monotonic() > deadline:
                return response
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
        time.sleep(1)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index] * 1000


def summary(stats: Stats) -> dict:
    every = [v for values in stats.latencies.values() for v in values]
    ok = len(every)
    out = {
        "requests": stats.requests,
        "ok": ok,
        "errors": sum(stats.errors.values()),
        "throughput": ok / stats.elapsed if stats.elapsed else 0.0,
        "p50": percentile(every, 50),
        "p95": percentile(every, 95),
        "p99": percentile(every, 99),
        "per_op": {
            op: {"n": len(v), "p50": percentile(v, 50), "p95": percentile(v, 95)}
            for op, v in sorted(stats.latencies.items())
        },
    }
    return out


def print_table(columns: dict[str, dict]) -> None:
    names = list(columns)
    print(f"\n{'':28}" + "".join(f"{n:>18}" for n in names))
    rows = [
        ("requests answered", "ok", "{:.0f}"),
        ("errors", "errors", "{:.0f}"),
        ("throughput (req/s)", "throughput", "{:.1f}"),
        ("latency p50 (ms)", "p50", "{:.0f}"),
        ("latency p95 (ms)", "p95", "{:.0f}"),
        ("latency p99 (ms)", "p99", "{:.0f}"),
    ]
    for label, key, fmt in rows:
        print(f"{label:28}" + "".join(f"{fmt.format(columns[n][key]):>18}" for n in names))
    ops = sorted({op for c in columns.values() for op in c["per_op"]})
    for op in ops:
        cells = []
        for n in names:
            o = columns[n]["per_op"].get(op)
            cells.append(f"{o['p50']:.0f}/{o['p95']:.0f} ({o['n']})" if o else "-")
        print(f"{op + ' p50/p95 (n)':28}" + "".join(f"{c:>18}" for c in cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=f"http://127.0.0.1:{os.environ.get('PORT', '8000')}")
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument(
        "--solo-duration",
        type=float,
        default=30.0,
        help="seconds of one agent alone first (0: skip)",
    )
    parser.add_argument("--bank", default="loadbench")
    parser.add_argument("--token", default=os.environ.get("KB_LOAD_TOKEN"))
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    assert_loopback(args.url)

    token = args.token or setup_bank(args.bank)
    health = wait_ready(args.url)
    print(f"server {args.url}: readyz {health.status_code} {health.text.strip()}")
    ids = bank_entry_ids(args.url, token, args.bank)
    if not ids:
        raise SystemExit("The bank's queries found no entries to connect to and walk from.")

    ledger = Ledger()
    columns: dict[str, dict] = {}
    if args.solo_duration > 0:
        solo = asyncio.run(
            run_phase(args.url, token, args.bank, ids, 1, args.solo_duration, args.timeout, ledger)
        )
        columns["1 agent"] = summary(solo)
        print(f"1 agent: {columns['1 agent']['ok']} answers in {solo.elapsed:.1f} s")
    crowd = asyncio.run(
        run_phase(args.url, token, args.bank, ids, args.agents, args.duration, args.timeout, ledger)
    )
    columns[f"{args.agents} agents"] = summary(crowd)
    print(f"{args.agents} agents: {crowd.requests} requests in {crowd.elapsed:.1f} s")
    print_table(columns)
    for stats in ([solo] if args.solo_duration > 0 else []) + [crowd]:
        for what, n in sorted(stats.errors.items()):
            print(f"  error {what}: {n}")
        for sample in stats.error_samples:
            print(f"  e.g. {sample}")

    checked = asyncio.run(verify(args.url, token, args.bank, ledger, args.timeout))
    print(
        f"\nwrites acknowledged: {checked['entries']} entries, {checked['edges']} edges, "
        f"{checked['reverted_merges']} merge→revert; lost: {len(checked['lost'])}"
    )
    for item in checked["lost"][:20]:
        print(f"  LOST {item}")
    if args.json:
        Path(args.json).write_text(json.dumps({"phases": columns, "verify": checked}, indent=2))
    total_errors = sum(c["errors"] for c in columns.values())
    return 1 if total_errors or checked["lost"] else 0


if __name__ == "__main__":
    sys.exit(main())
