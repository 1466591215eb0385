"""Replay a bank's logged queries with fold on and off; print what folding gained and cost.

    .venv/bin/python bench/fold_replay.py SLUG [--days 7] [--limit N]

Reads the bank's query log of the last ``--days`` days (``tests/labs/replay.py``), runs each
query again flat and folded, and prints the summary (pointers handed over, payload sizes,
neighbour-slot pressure). Exit status 1 when a flat top-k entry is missing from a folded
payload. Formerly ``manage.py fold_replay``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from tqdm import tqdm  # noqa: E402

from kb.models import Bank  # noqa: E402
from tests.labs.replay import replay  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bank")
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--limit", type=int, default=None, help="At most this many queries.")
    args = parser.parse_args()
    bank = Bank.objects.filter(slug=args.bank).first()
    if bank is None:
        parser.error(f"No such bank: {args.bank}")
    bar = tqdm(desc="replaying", unit="query", file=sys.stderr)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    try:
        report = replay(bank, days=args.days, limit=args.limit, progress=progress)
    finally:
        bar.close()
    summary = report.summary()
    width = max(len(k) for k in summary)
    for key, value in summary.items():
        print(f"{key:<{width}}  {value}")
    for query, ids in report.lost[:20]:
        print(f"LOST {ids} for query {query!r}")
    if report.lost:
        print(f"{summary['entries_lost']} flat top-k entries were missing from fold payloads.")
        return 1
    print(f"Replayed {report.queries} queries of {bank.slug}: nothing lost.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
