"""The explorer's views of a bank too large to draw whole: the endpoint times of the community
overview, a drill-down into the largest community, and an answer's neighbourhood, each cold
(its cached layout dropped first: what every request cost before the layouts were cached)
and cached (read back from ``ViewLayout``), side by side in one run.

Needs a bank that already has its communities (for the Debian index: ``KB_EMBEDDER=hashing
python manage.py import_debian debian`` then ``python manage.py build_communities debian``),
or ``--seed N`` to write a generated bank of N entries set-wise (``tests/e2e/scale_seed``,
65,000 by default, seconds) when the bank does not exist. Each request goes through Django's
test client with a read token; the figures are p50 of ``--runs`` requests.

    .venv/bin/python bench/explorer_large.py [--bank debian] [--runs 5] [--seed 65000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def timed(client, url: str, runs: int, before=None) -> tuple[float, dict]:
    """p50 of ``runs`` GETs of ``url`` (``before()`` runs untimed ahead of each)."""
    times, body = [], {}
    for _ in range(runs):
        if before:
            before()
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.content[:300]
        body = response.json()
    return statistics.median(times), body


def _bank(slug: str, seed: int | None):
    from kb.models import Bank

    bank = Bank.objects.filter(slug=slug).first()
    if bank is not None or not seed:
        return bank or Bank.objects.get(slug=slug)
    from tests.e2e.scale_seed import seed_large_bank

    bank = Bank.objects.create(slug=slug, name=f"{slug} (generated, {seed} entries)")
    done = seed_large_bank(bank, seed)
    print(
        f"seeded {slug}: {done['entries']} entries, {done['clusters']} communities in "
        f"{done['seconds']:.1f} s"
    )
    return bank


def _rows(client, bank, runs: int) -> list[tuple[str, float, float, str]]:
    from graph.analytics.overview import drill_max
    from graph.models import Community, ViewLayout
    from kb.models import Entry

    base = f"/api/v1/banks/{bank.slug}/graph"
    biggest = Community.objects.filter(bank=bank).order_by("-size").first()
    seeds = list(
        Entry.objects.filter(bank=bank).order_by("pk").values_list("short_id", flat=True)[:30]
    )

    def drop(**which):
        return lambda: ViewLayout.objects.filter(bank=bank, **which).delete()

    rows = []
    url = f"{base}/communities"
    cold, body = timed(client, url, runs, drop(community__isnull=True))
    warm, body = timed(client, url, runs)
    rows.append(("overview", cold, warm, f"{len(body['communities'])} communities"))
    url = f"{base}/communities/{biggest.pk}?include_backfill=true"
    cold, body = timed(client, url, runs, drop(community=biggest))
    warm, body = timed(client, url, runs)
    assert body["layout"]["status"] == "ready", body["layout"]
    what = f"{len(body['nodes'])} of {biggest.size} entries (cap {drill_max()}), "
    rows.append(("largest community", cold, warm, what + f"{len(body['links'])} edges"))
    url = f"{base}/around?include_backfill=true&ids={','.join(seeds)}"
    ms, body = timed(client, url, runs)
    rows.append(("30 entries and their neighbours", ms, ms, f"{len(body['nodes'])} entries"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bank", default="debian")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=None, help="generate the bank if missing")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.conf import settings
    from rest_framework.test import APIClient

    from kb.models import Entry
    from kb.services.tokens import create_token

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    bank = _bank(args.bank, args.seed)
    _, raw = create_token("bench-explorer-large", [bank], "read")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    load = os.getloadavg()[0]
    rows = _rows(client, bank, args.runs)
    entries = Entry.objects.filter(bank=bank).count()
    print(
        f"bank {bank.slug}: {entries:,} entries · load average {load:.1f} → "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs · p50 of {args.runs}"
    )
    print(f"{'view':34s} {'cold ms':>9s} {'cached ms':>10s} {'ratio':>7s}   what")
    for name, cold, warm, what in rows:
        ratio = cold / warm if warm else float("nan")
        print(f"{name:34s} {cold:9.0f} {warm:10.0f} {ratio:6.1f}×   {what}")


if __name__ == "__main__":
    main()
