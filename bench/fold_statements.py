"""The fold's two statements of several commits, replayed in turn: backend CPU per execution.

``bench/fold.py`` times whole queries; this isolates the database's share. For each commit
(``--revisions``, comma-separated; ``HEAD`` and the like work, the working tree does not) it runs
the query of that commit on the bench bank of ``bench/fold.py`` (same pools, no hub, the
1k-edge and the 5k-edge hub at rank 1), captures the statements the fold prepares (the pool
edges, then the neighbours), and replays them round-robin, each commit's statement in turn, as
prepared statements on one connection: the CPU time of the database backend
(``/proc/<pid>/schedstat``) per execution, mean over ``--rounds`` (the first is warm-up).

    .venv/bin/python bench/fold_statements.py --revisions f54db51,HEAD [--queries 30]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def capture(module, fold_module, bank, pools, hub) -> list[list[tuple]]:
    """Per pool, the (sql, params) the fold of ``module`` prepared, in order."""
    captured = []
    for vector, text, hits in pools:
        hits = list(hits)
        if hub is not None:
            first = type(hits[0])(hub, hits[0].score + 1, 0.9, 0.9, None, ["vector"], 1)
            hits = [first] + [h for h in hits if h.entry_id != hub][:19]
        got: list[tuple] = []
        real = fold_module.fetch_prepared

        def recording(sql, params, _got=got, _real=real):
            _got.append((sql, params))
            return _real(sql, params)

        fold_module.fetch_prepared = recording
        # The ranking is fixed: older versions call rank_candidates, newer ones rank_and_embed
        # (the ranking and the query's vector; patching rank_candidates alone left those
        # searching again, without the hub at rank 1).
        name = "rank_and_embed" if hasattr(module, "rank_and_embed") else "rank_candidates"

        def fixed(*_a, _h=hits, _v=vector, _name=name, **k):
            if _name == "rank_and_embed":
                return list(_h), k.get("query_vector") or _v
            return list(_h)

        saved = getattr(module, name)
        setattr(module, name, fixed)
        try:
            module.run_query(bank, module.QueryParams(text), record=False, query_vector=vector)
        finally:
            fold_module.fetch_prepared = real
            setattr(module, name, saved)
        captured.append(got)
    return captured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", default="f54db51,HEAD")
    parser.add_argument("--size", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--edges-per-entry", type=float, default=3.0)
    parser.add_argument("--bank-prefix", default="bench-search")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import fold as fold_bench

    from kb.prepared import fetch_prepared

    rng = np.random.default_rng(42)
    bank, _, hubs = fold_bench.prepare_bank(args, rng)
    pools = fold_bench.flat_pools(bank, args.queries, rng)
    revisions = [r.strip() for r in args.revisions.split(",") if r.strip()]
    captured = {}
    for rev in revisions:
        module = fold_bench.legacy_modules(rev)
        tag = "".join(c if c.isalnum() else "_" for c in rev)
        fold_module = sys.modules[f"legacy_{tag}_fold"]
        for label, hub in hubs:
            captured[rev, label] = capture(module, fold_module, bank, pools, hub)
    clock = fold_bench.CpuClock()
    cpu: dict[tuple, list[float]] = {}
    for round_ in range(args.rounds):
        for i in range(len(pools)):
            turn = revisions[i % len(revisions) :] + revisions[: i % len(revisions)]
            for label, _ in hubs:
                for rev in turn:
                    for k, (sql, params) in enumerate(captured[rev, label][i]):
                        before = clock.now()[1]
                        fetch_prepared(sql, params)
                        if round_:
                            cpu.setdefault((label, rev, k), []).append(clock.now()[1] - before)
    print(f"load average {os.getloadavg()}; {len(pools)} pools x {args.rounds - 1} rounds")
    print("| results include | code | pool edges (ms) | neighbours (ms) |\n|---|---|---|---|")
    for label, _ in hubs:
        for rev in revisions:
            edges, neighbours = (np.mean(cpu[label, rev, k]) * 1000 for k in (0, 1))
            print(f"| {label} | {rev} | {edges:.3f} | {neighbours:.3f} |")


if __name__ == "__main__":
    main()
