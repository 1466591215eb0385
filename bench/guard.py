"""Precision and recall of the learning guard on labelled sets, and cross-validation.

    python bench/guard.py                      # the shipped guard on each training file + CV
    python bench/guard.py --file blind.jsonl   # the shipped guard on any other labelled file
    python bench/guard.py --train              # retrain kb/services/guard_model.npz
    python bench/guard.py --show               # also print every misclassified text

Each line of a file is ``{"text", "label": "refuse" | "accept", "domain"}``. A refusal is the
positive class: precision = refused texts that should be refused / all refused; recall =
refused texts that should be refused / all that should be. The guard is the hard rules plus the
classifier (MiniLM embedding + linguistic signals, kb/services/guard_model.py).

Cross-validation retrains the classifier with the shipped hyper-parameters: one fold per
training file (train on the other files, test on it: each file was written by someone else or
in other domains), then leave-one-domain-out over all of them. The shipped model is trained on
every training file, so its numbers on those files are in-sample; the folds are the estimate
for texts it has not seen.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from kb.services import guard_model  # noqa: E402
from kb.services.embedding import MiniLMEmbedder  # noqa: E402
from kb.services.guard import HARD_RULES, guard_reasons, narration_reason  # noqa: E402

DATA = ROOT / "bench" / "data"


def load(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for row in rows:
        row["file"] = path.name
    return rows


def score(rows: list[dict]) -> dict:
    tp = sum(r["refused"] and r["label"] == "refuse" for r in rows)
    fp = sum(r["refused"] and r["label"] != "refuse" for r in rows)
    fn = sum(not r["refused"] and r["label"] == "refuse" for r in rows)
    return {
        "n": len(rows),
        "precision": round(tp / (tp + fp), 3) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 3) if tp + fn else 1.0,
        "fp": fp,
        "fn": fn,
    }


def line(name: str, rows: list[dict]) -> str:
    s = score(rows)
    return f"{name:<34}{s['n']:>5}{s['precision']:>11}{s['recall']:>8}{s['fp']:>5}{s['fn']:>5}"


HEADER = f"{'':<34}{'n':>5}{'precision':>11}{'recall':>8}{'fp':>5}{'fn':>5}"


def hard(text: str) -> list[str]:
    return [reason for rule in HARD_RULES if (reason := rule(text))]


def decide(rows: list[dict], vectors: np.ndarray, model=None) -> None:
    """Set ``refused`` and ``reasons`` on each row: the hard rules, then the classifier (the
    shipped one, or ``model``)."""
    for row, vector in zip(rows, vectors, strict=True):
        reasons = hard(row["text"])
        if not reasons:
            verdict = guard_model.judge(row["text"], vector, with_model=model)
            reason = narration_reason(verdict)
            reasons = [reason] if reason else []
        row["reasons"], row["refused"] = reasons, bool(reasons)


def report(title: str, rows: list[dict], by: str = "domain") -> None:
    print(f"\n{title}\n{HEADER}")
    groups = defaultdict(list)
    for row in rows:
        groups[row[by]].append(row)
    for name, group in sorted(groups.items()):
        print(line(f"  {name}", group))
    print(line("  all", rows))


def fold(rows, vectors, test_mask) -> list[dict]:
    train = [r for r, t in zip(rows, test_mask, strict=True) if not t]
    test = [dict(r) for r, t in zip(rows, test_mask, strict=True) if t]
    decide(
        test,
        vectors[test_mask],
        guard_model.Model.of(guard_model.train(train, vectors[~test_mask])),
    )
    return test


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", action="append", help="a labelled file (repeatable)")
    parser.add_argument("--train", action="store_true", help="retrain the shipped model")
    parser.add_argument("--show", action="store_true", help="print misclassified texts")
    parser.add_argument("--no-cv", action="store_true", help="skip cross-validation")
    args = parser.parse_args()
    embedder = MiniLMEmbedder()
    training = [row for name in guard_model.TRAINING_FILES for row in load(DATA / name)]
    files = [Path(f) for f in args.file] if args.file else []

    if args.train or not args.no_cv:
        vectors = np.asarray(embedder.embed([r["text"] for r in training]), dtype=np.float64)
    if args.train:
        np.savez_compressed(guard_model.MODEL_PATH, **guard_model.train(training, vectors))
        guard_model.model.cache_clear()
        print(f"wrote {guard_model.MODEL_PATH.relative_to(ROOT)} ({len(training)} texts)")

    for path in files or [DATA / name for name in guard_model.TRAINING_FILES]:
        rows = load(path)
        decide(rows, np.asarray(embedder.embed([r["text"] for r in rows]), dtype=np.float64))
        inside = path.name in guard_model.TRAINING_FILES and path.parent.resolve() == DATA
        report(f"shipped guard on {path.name}{' (in its training data)' if inside else ''}", rows)
        if args.show:
            for row in rows:
                if row["refused"] != (row["label"] == "refuse"):
                    wrong = "refused" if row["refused"] else "accepted"
                    print(f"  [{row['label']} wrongly {wrong}] {row['text']}\n    {row['reasons']}")

    if not args.no_cv:
        files_of = np.array([r["file"] for r in training])
        print("\ncross-validation: train on the other training files, test on one")
        print(HEADER)
        misses = []
        for name in guard_model.TRAINING_FILES:
            tested = fold(training, vectors, files_of == name)
            print(line(f"  test {name}", tested))
            misses += [r for r in tested if r["refused"] != (r["label"] == "refuse")]
        if args.show:
            for row in misses:
                wrong = "refused" if row["refused"] else "accepted"
                print(f"  [{row['file']}: {row['label']} wrongly {wrong}] {row['text']}")
        domains = np.array([r["domain"] for r in training])
        held = []
        for domain in sorted(set(domains)):
            held += fold(training, vectors, domains == domain)
        report("cross-validation: leave one domain out (each domain tested unseen)", held)

    times = []
    for row in training[:40]:
        start = time.perf_counter()
        guard_reasons({"title": "", "content": row["text"]})
        times.append(time.perf_counter() - start)
    print(
        f"\nguard time per text: p50 {statistics.median(times) * 1000:.1f} ms, "
        f"max {max(times) * 1000:.1f} ms (load average {os.getloadavg()[0]:.2f})"
    )


if __name__ == "__main__":
    main()
