"""In-process MCP dispatch: the cost of one ``get_entry`` tool call through
``mcpserver.dispatch.call_tool`` (authentication, the request context, the action), with and
without a ``bank`` argument, and the statements each call runs. No server: this isolates the
dispatch from the transport (``bench/mcp.py`` measures the transports).

Run it in two checkouts (this one and a baseline worktree of an earlier commit) one after the
other, a few times alternately, and compare the medians of the same run order:

    .venv/bin/python bench/mcp_dispatch.py [--calls 400] [--warmup 40]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ["KB_EMBEDDER"] = "hashing"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=40)
    args = parser.parse_args()

    import django

    django.setup()
    import logging

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from kb.models import Bank, Entry
    from kb.services.entries import clean_entry_data, create_entry
    from kb.services.tokens import create_token
    from mcpserver.dispatch import call_tool
    from mcpserver.tools import tool_specs

    logging.getLogger("config.serving.request").setLevel(logging.WARNING)
    bank, _ = Bank.objects.get_or_create(slug="bench-dispatch", defaults={"name": "dispatch"})
    entry = Entry.objects.filter(bank=bank).first() or create_entry(
        bank, clean_entry_data(bank, {"title": "Ship day", "lifetime": {"durable": True}})
    )
    _, raw = create_token("bench-dispatch", [bank], "read")
    spec = next(s for s in tool_specs() if s.name == "get_entry")
    shapes = {
        "no bank": {"id": entry.short_id},
        "bank": {"bank": bank.slug, "id": entry.short_id},
    }
    for name, arguments in shapes.items():
        for _ in range(args.warmup):
            assert not call_tool(spec, dict(arguments), raw).is_error
        with CaptureQueriesContext(connection) as ctx:
            call_tool(spec, dict(arguments), raw)
        statements = len(ctx.captured_queries)
        times = []
        for _ in range(args.calls):
            started = time.perf_counter()
            call_tool(spec, dict(arguments), raw)
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        p95 = times[int(len(times) * 0.95) - 1]
        print(
            f"{name:8s} statements {statements}  p50 {statistics.median(times):.2f} ms  "
            f"p95 {p95:.2f} ms  ({args.calls} calls)"
        )
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
