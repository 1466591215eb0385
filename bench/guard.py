"""Precision and recall of the learning guard on a labelled set.

    python bench/guard.py [--file bench/data/guard_labelled.jsonl] [--show]

Each line of the file is ``{"text", "label": "refuse" | "accept", "domain"}``. A refusal is the
positive class: precision = refused texts that should be refused / all refused; recall =
refused texts that should be refused / all that should be. Prints per domain and overall, and
with ``--show`` every misclassified text with the reason the guard gave.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kb.services.guard import guard_reasons  # noqa: E402


def score(rows: list[dict]) -> dict:
    tp = fp = fn = tn = 0
    for row in rows:
        refused = bool(row["reasons"])
        should = row["label"] == "refuse"
        tp += refused and should
        fp += refused and not should
        fn += should and not refused
        tn += not refused and not should
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return {
        "n": len(rows),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": round(precision, 3),
        "recall": round(recall, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", default=str(ROOT / "bench/data/guard_labelled.jsonl"))
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    rows = [json.loads(line) for line in Path(args.file).read_text().splitlines() if line.strip()]
    for row in rows:
        row["reasons"] = guard_reasons({"title": "", "content": row["text"]})
    by_domain = defaultdict(list)
    for row in rows:
        by_domain[row["domain"]].append(row)
    print(f"{'domain':<12}{'n':>5}{'precision':>11}{'recall':>8}{'fp':>5}{'fn':>5}")
    for domain, group in sorted(by_domain.items()) + [("all", rows)]:
        s = score(group)
        print(
            f"{domain:<12}{s['n']:>5}{s['precision']:>11}{s['recall']:>8}{s['fp']:>5}{s['fn']:>5}"
        )
    if args.show:
        for row in rows:
            if bool(row["reasons"]) != (row["label"] == "refuse"):
                print(
                    f"\n[{row['label']} wrongly {'refused' if row['reasons'] else 'accepted'}] "
                    f"{row['text']}\n  {row['reasons']}"
                )


if __name__ == "__main__":
    main()
