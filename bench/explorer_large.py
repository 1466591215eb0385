"""The explorer's views of a bank too large to draw whole: the endpoint times of the community
overview, a drill-down into the largest community, and an answer's neighbourhood.

Needs a bank that already has its communities (for the Debian index: ``KB_EMBEDDER=hashing
python manage.py import_debian debian`` then ``python manage.py build_communities debian``).
Each request goes through Django's test client with a read token; the figures are medians of
``--runs`` requests (the layouts of drill-downs are computed in the request, not cached).

    .venv/bin/python bench/explorer_large.py [--bank debian] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def timed(client, url: str, runs: int) -> tuple[float, dict]:
    times, body = [], {}
    for _ in range(runs):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.content[:300]
        body = response.json()
    return statistics.median(times), body


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bank", default="debian")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.conf import settings
    from rest_framework.test import APIClient

    from graph.analytics.overview import drill_max
    from graph.models import Community
    from kb.models import Bank, Entry
    from kb.services.tokens import create_token

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    bank = Bank.objects.get(slug=args.bank)
    _, raw = create_token("bench-explorer-large", [bank], "read")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    base = f"/api/v1/banks/{bank.slug}/graph"
    biggest = Community.objects.filter(bank=bank).order_by("-size").first()
    seeds = list(
        Entry.objects.filter(bank=bank).order_by("pk").values_list("short_id", flat=True)[:30]
    )
    rows = []
    ms, body = timed(client, f"{base}/communities", args.runs)
    rows.append(
        ("overview", ms, f"{len(body['communities'])} communities, {body['entries']} entries")
    )
    ms, body = timed(client, f"{base}/communities/{biggest.pk}?include_backfill=true", args.runs)
    rows.append(
        (
            f"largest community (cap {drill_max()})",
            ms,
            f"{len(body['nodes'])} of {biggest.size} entries, {len(body['links'])} edges",
        )
    )
    ms, body = timed(
        client, f"{base}/around?include_backfill=true&ids={','.join(seeds)}", args.runs
    )
    rows.append(("30 entries and their neighbours", ms, f"{len(body['nodes'])} entries"))
    for name, ms, what in rows:
        print(f"{name:40s} {ms:9.0f} ms   {what}")


if __name__ == "__main__":
    main()
