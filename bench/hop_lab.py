"""The one-hop lab: a scratch bank of one-hop tasks; how often does the fold hand over the hop?

    .venv/bin/python bench/hop_lab.py [--tasks 30] [--seed 7] [--keep]
        [--crowd 10 --crowd-same-share 0.5 --crowd-order before|after] [--b-text opaque|pertinent]

Builds the tasks of ``tests/labs/hoplab.py`` in a scratch bank of the configured database,
embeds them with the configured model (KB_EMBEDDER), runs the leak check (a lab whose answer
leaks into the question is void: exit status 1) and prints the summary. The bank is dropped
afterwards unless ``--keep``. Formerly ``manage.py hop_lab``.
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

from kb import audit  # noqa: E402
from tests.labs.hoplab import B_TEXTS, Crowd, hop_lab  # noqa: E402


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="Keep the scratch bank.")
    parser.add_argument(
        "--crowd", type=int, default=0, help="Extra noted edges from each A to unrelated entries."
    )
    parser.add_argument(
        "--crowd-same-share",
        type=float,
        default=0.5,
        help="Share of the crowd edges with the A-B edge's relation and direction.",
    )
    parser.add_argument("--crowd-order", choices=["before", "after"], default="before")
    parser.add_argument(
        "--b-text",
        choices=B_TEXTS,
        default="opaque",
        help="B names only its codename (opaque) or also the system/step it affects (pertinent).",
    )
    args = parser.parse_args()
    if not 1 <= args.tasks <= 1000:
        parser.error("--tasks must be between 1 and 1000.")
    if not 0 <= args.crowd <= 200 or not 0 <= args.crowd_same_share <= 1:
        parser.error("--crowd must be 0..200 and --crowd-same-share 0..1.")
    return args


def main() -> int:
    args = arguments()
    print(
        f"Building {args.tasks} tasks and embedding them with the configured model…",
        file=sys.stderr,
    )
    crowd = Crowd(args.crowd, args.crowd_same_share, args.crowd_order, args.b_text)
    with audit.acting_as("bench:hop_lab"):
        report, slug = hop_lab(args.tasks, seed=args.seed, keep=args.keep, crowd=crowd)
    summary = report.summary()
    width = max(len(k) for k in summary)
    for key, value in summary.items():
        print(f"{key:<{width}}  {value}")
    if report.leaks:
        for leak in report.leaks[:20]:
            print(f"LEAK {leak}")
        print(f"Leak check failed: {len(report.leaks)} leak(s); the lab's result is void.")
        return 1
    kept = "kept" if args.keep else "dropped"
    print(
        f"Hop lab on scratch bank {slug} ({kept}): B reachable in "
        f"{summary['b_reachable_in_fold_pct']}% of {report.kept} hop tasks, 0% with the flat top-8."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
