"""The hop lab, crowded and uncrowded, with the fold of git ``--before`` and of the working tree
on the same scratch banks (one build and one embedding per bank; real MiniLM model).

Each B-text mode (``--b-text``: opaque, pertinent or both; see ``tests/labs/hoplab.py``) gets
its own banks. On a crowded bank it also prints the signal report of ``bench/hop_signals.py``
(how often B would win a neighbour slot by its entry vectors, by an edge-note embedding, or
both), unless ``--skip-signals``.

    .venv/bin/python bench/hop_crowded.py [--tasks 30] [--crowd 10] [--order before]
        [--b-text both] [--before REV] [--skip-uncrowded] [--skip-signals]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=30)
    parser.add_argument("--crowd", type=int, default=10)
    parser.add_argument("--same-share", type=float, default=0.5)
    parser.add_argument("--order", choices=["before", "after"], default="before")
    parser.add_argument("--before", default="HEAD")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-uncrowded", action="store_true")
    parser.add_argument("--skip-signals", action="store_true")
    parser.add_argument("--b-text", choices=["opaque", "pertinent", "both"], default="both")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import fold as fold_bench
    import hop_signals

    from graph.retrieval.query import run_query as new_run_query
    from kb import audit
    from kb.models import Entry
    from kb.services.banks import ensure_bank
    from kb.services.embedding import embed_entries
    from tests.labs import hoplab

    legacy = fold_bench.legacy_modules(args.before)
    modes = hoplab.B_TEXTS if args.b_text == "both" else (args.b_text,)
    setups = []
    for mode in modes:
        setups.append(
            (f"crowded, B {mode}", hoplab.Crowd(args.crowd, args.same_share, args.order, mode))
        )
        if not args.skip_uncrowded:
            setups.append((f"uncrowded, B {mode}", hoplab.Crowd(b_text=mode)))
    out, signals = {}, {}
    for name, crowd in setups:
        bank, _ = ensure_bank(f"hop-bench-{secrets.token_hex(3)}", name="hop bench (scratch)")
        try:
            with audit.acting_as("hop_bench"):
                tasks = hoplab.build_tasks(bank, args.tasks, args.seed, crowd)
            embed_entries(Entry.objects.filter(bank=bank))
            for version, run_query in (("before", legacy.run_query), ("after", new_run_query)):
                hoplab.run_query = run_query
                out[f"{name} / {version}"] = hoplab.run_lab(bank, tasks, crowd=crowd).summary()
                print(name, version, json.dumps(out[f"{name} / {version}"]), flush=True)
            hoplab.run_query = new_run_query
            if crowd.per_a and not args.skip_signals:
                signals[name] = hop_signals.signal_report(bank, tasks)
                print(name, "signals", json.dumps(signals[name]), flush=True)
        finally:
            hoplab.run_query = new_run_query
            bank.delete()
    keys = [
        "tasks_kept_b_not_in_flat_top8",
        "b_reachable_in_fold_pct",
        "b_as_neighbor",
        "b_as_folded_pointer",
        "flat_top8_entries_lost",
        "leaks",
    ]
    print("\n| hop lab | code | " + " | ".join(keys) + " |")
    print("|---|---|" + "---|" * len(keys))
    for label, summary in out.items():
        setup, version = label.split(" / ")
        print(f"| {setup} | {version} | " + " | ".join(str(summary[k]) for k in keys) + " |")
    if signals:
        keys = list(next(iter(signals.values())))
        print("\n| hop lab | " + " | ".join(keys) + " |")
        print("|---|" + "---|" * len(keys))
        for setup, report in signals.items():
            print(f"| {setup} | " + " | ".join(str(report[k]) for k in keys) + " |")


if __name__ == "__main__":
    main()
