"""Precision of entity resolution on a labelled set from two domains (logistics, a clinic).

    .venv/bin/python bench/resolve.py [--data bench/data/resolve_labelled.json] [--show]

The tuning set is ``bench/data/resolve_labelled.json``; the blind set (written by someone who
never saw the code) is ``bench/data/blind/resolve.json``. Where a query is labelled with the
expected ``matched`` (the blind set does), the share of resolved answers whose ``matched``
agrees is printed too (``key`` counts as the blind set's ``exact``: a key equal up to case).

Each domain is loaded into a scratch bank of the configured database (removed afterwards);
every labelled surface form is resolved; precision, recall and abstention are printed per
domain and overall. Resolution reads titles, keys and aliases only: no embedding model.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("KB_EMBEDDER", "hashing")

import django  # noqa: E402

django.setup()

from kb.models import Bank  # noqa: E402
from tests.labs.resolve_eval import ResolveScore, domains, evaluate, load_domain  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--show", action="store_true", help="print every miss")
    parser.add_argument("--data", type=Path, default=None, help="a labelled set (JSON)")
    args = parser.parse_args()
    total = ResolveScore()
    print(f"{'domain':<12}{'forms':>6}{'precision':>11}{'recall':>8}{'abstention':>12}")
    for name, spec in domains(args.data).items():
        bank = Bank.objects.create(slug=f"resolve-{uuid.uuid4().hex[:8]}", name=f"resolve {name}")
        try:
            score = evaluate(bank, spec, load_domain(bank, spec))
        finally:
            bank.delete()
        for attr in (
            "resolved",
            "resolved_right",
            "should_resolve",
            "should_abstain",
            "abstained_right",
            "matched_labelled",
            "matched_right",
        ):
            setattr(total, attr, getattr(total, attr) + getattr(score, attr))
        total.misses += [f"[{name}] {m}" for m in score.misses]
        forms = len(spec["queries"])
        print(
            f"{name:<12}{forms:>6}{score.precision:>11.3f}{score.recall:>8.3f}"
            f"{score.abstention:>12.3f}"
        )
    forms = total.should_resolve + total.should_abstain
    print(
        f"{'all':<12}{forms:>6}{total.precision:>11.3f}{total.recall:>8.3f}"
        f"{total.abstention:>12.3f}"
    )
    if total.matched_labelled:
        print(
            f"matched agrees with the label on {total.matched_right}/{total.matched_labelled} "
            "resolved answers"
        )
    if args.show:
        print("\n".join(total.misses) or "no misses")


if __name__ == "__main__":
    main()
