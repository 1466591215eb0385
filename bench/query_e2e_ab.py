"""``POST /query`` at 100k entries, this checkout against a baseline checkout, in one run.

Each round runs bench/query_e2e.py once in each checkout (a fresh process each: an empty query
cache, the same new questions, the same database and bank), the order alternating round by
round so load from other processes and the warming of the bank's pages hit both alike. This
file's copy of query_e2e.py is run in both (copied into the baseline's ``bench/`` when missing
there or different), so only the application code differs. Timings are pooled over rounds:
p50/p95 per side and the ratio, with the load average of each round.

The baseline checkout is a ``git worktree add /tmp/base <commit>`` with ``.venv`` and
``.models`` linked to this one's; it must use this checkout's database (``KB_PGDATA`` is set to
this checkout's data folder for it, so the bank is built once).

    .venv/bin/python bench/query_e2e_ab.py --before /tmp/base [--rounds 4] [--queries 30]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ROWS = (
    ("new", "new question (embedding computed)"),
    ("model", "the model alone (one new short text)"),
    ("repeated", "repeated question (vector cached)"),
    ("repeated_sql", "its SQL statements (repeated question)"),
    ("cpu_new", "CPU per new question (this process + database)"),
    ("cpu_new_app", "  of which this process (model, Python)"),
    ("cpu_new_db", "  of which the database backend"),
    ("cpu_repeated", "CPU per repeated question"),
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="The baseline checkout.")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--queries", type=int, default=30, help="New questions per round.")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=1, help="Model threads (a web process: 1).")
    return parser.parse_args()


def prepare_baseline(before: Path) -> None:
    mine = HERE / "query_e2e.py"
    theirs = before / "bench" / "query_e2e.py"
    if not theirs.exists() or theirs.read_bytes() != mine.read_bytes():
        shutil.copy(mine, theirs)


def one_run(checkout: Path, args: argparse.Namespace, out: Path) -> dict:
    env = {**os.environ, "KB_PGDATA": str(ROOT / ".pgdata")}
    command = [
        str(checkout / ".venv" / "bin" / "python"),
        str(checkout / "bench" / "query_e2e.py"),
        f"--size={args.size}",
        f"--queries={args.queries}",
        f"--torch-threads={args.threads}",
        "--runtimes=onnx",
        f"--raw={out}",
    ]
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{checkout}: query_e2e.py failed\n{done.stderr[-3000:]}")
    return json.loads(out.read_text())


def pct(values: list[float]) -> tuple[float, float]:
    return float(np.percentile(values, 50)), float(np.percentile(values, 95))


def main() -> None:
    args = parse_args()
    before = Path(args.before).resolve()
    prepare_baseline(before)
    sides = {"before": before, "now": ROOT}
    pooled: dict[str, dict[str, list[float]]] = {s: {k: [] for k, _ in ROWS} for s in sides}
    statements: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for side in order:
                raw = one_run(sides[side], args, Path(tmp) / f"{side}-{r}.json")
                for key, _ in ROWS:
                    pooled[side][key] += raw.get(key, [])
                for name, values in raw["statements"].items():
                    statements[side].setdefault(name, []).extend(values)
                p50, _ = pct(raw["new"])
                loads = "/".join(f"{x:.1f}" for x in raw["load"])
                print(f"round {r + 1} {side:<6}: new question p50 {p50:6.1f} ms  (load {loads})")
                sys.stdout.flush()
    n = args.rounds * args.queries
    print(
        f"\n{args.rounds} rounds x {args.queries} new questions per side ({n} each); "
        f"1-min load now {os.getloadavg()[0]:.2f}\n"
    )
    print(
        "| POST /query at 100k (hybrid, fold on) | before p50 / p95 (ms) | now p50 / p95 (ms) "
        "| now / before (p50) |"
    )
    print("|---|---|---|---|")
    for key, name in ROWS:
        if not pooled["before"][key] or not pooled["now"][key]:
            continue
        b, a = pct(pooled["before"][key]), pct(pooled["now"][key])
        print(f"| {name} | {b[0]:.1f} / {b[1]:.1f} | {a[0]:.1f} / {a[1]:.1f} | {a[0] / b[0]:.2f} |")
    print("\n| statement (new questions), p50 ms | before | now |")
    print("|---|---|---|")
    for name in sorted(statements["now"], key=lambda k: -np.median(statements["now"][k])):
        b = statements["before"].get(name)
        before_p50 = f"{np.median(b):.2f}" if b else "—"
        print(f"| {name} | {before_p50} | {np.median(statements['now'][name]):.2f} |")


if __name__ == "__main__":
    main()
