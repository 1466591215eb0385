"""The lexical arm alone (full text and title trigrams, ``kb.services.search``'s prepared
statement), this checkout against another's, on three kinds of query: Debian descriptions
(long questions), one or two of their words (keywords, as real banks are mostly asked), and
those keywords with a letter dropped (typos: full text misses them, so the trigram arm runs).
The two statements take turns query by query, each run as the app runs it (prepared, generic
plan); the rows each returns are compared.

The bank is an existing one (default ``bench-e2e-100000``: ``bench/query_e2e.py`` builds it).

    .venv/bin/python bench/lexical_arm.py --before /work/wt/base [--bank SLUG] [--queries 50]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def other_search(checkout: Path):
    """``kb/services/search.py`` of another checkout, as a module of its own."""
    spec = importlib.util.spec_from_file_location(
        "before_search", checkout / "kb/services/search.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["before_search"] = module
    spec.loader.exec_module(module)
    return module


def query_sets(count: int) -> dict[str, list[str]]:
    import bank_vectors

    descriptions = bank_vectors.descriptions(4000 + 200 + 2 * 120 + 120 + 10)[4200:]
    rng = random.Random(5)
    keywords = []
    for text in descriptions:
        words = [w for w in text.split() if w.isalpha() and len(w) > 3]
        if words:
            keywords.append(" ".join(rng.sample(words, min(len(words), rng.choice([1, 2])))))
    typos = [w[:2] + w[3:] for w in keywords if len(w) > 5]
    return {
        "descriptions": descriptions[:count],
        "keywords": keywords[:count],
        "typos": typos[:count],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="The checkout to compare with.")
    parser.add_argument("--bank", default="bench-e2e-100000")
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import search as search_bench

    from kb.models import Bank
    from kb.prepared import fetch_prepared
    from kb.services import search

    before = other_search(args.before)
    bank = Bank.objects.get(slug=args.bank)
    statements = {
        "this": search._statement(True, (), bank.pk, 80, search.LEXICAL_SCAN),
        "before": before._statement(True, (), bank.pk, 80, before.LEXICAL_SCAN),
    }

    def timed(which: str, query: str) -> tuple[float, list]:
        started = time.perf_counter()
        rows = fetch_prepared(statements[which], search._lexical_params(query))
        return (time.perf_counter() - started) * 1000, sorted(rows)

    print(f"Machine: {search_bench.machine()}; bank {bank.slug}; load {os.getloadavg()[0]:.2f}")
    print("| queries | this p50 / p95 ms | before p50 / p95 ms | same rows |")
    print("|---|---|---|---|")
    for name, queries in query_sets(args.queries).items():
        ms = {"this": [], "before": []}
        same = 0
        for i, query in enumerate(queries):
            order = ("this", "before") if i % 2 else ("before", "this")
            rows = {}
            for which in order:
                seconds, rows[which] = timed(which, query)
                ms[which].append(seconds)
            same += rows["this"] == rows["before"]
        cells = {
            k: f"{np.percentile(v, 50):.1f} / {np.percentile(v, 95):.1f}" for k, v in ms.items()
        }
        print(
            f"| {name} ({len(queries)}) | {cells['this']} | {cells['before']} | {same}/{len(queries)} |"
        )
    print(f"load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
