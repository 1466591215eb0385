"""Duplicate refusal: precision and recall of the pair rule on labelled pairs.

    .venv/bin/python bench/duplicates.py [--data bench/data/duplicates_tuning.jsonl]
        [--threshold 0.95] [--sweep] [--show]

Each line is ``{"a": {"title", "content", "summary"?}, "b": {...}, "duplicate": true|false}``
(the blind set names the sides ``existing`` and ``new``; both spellings are read).
The pair is judged by ``kb.services.duplicates.is_duplicate_pair`` on the real model's content
vectors (title, summary and content: the text the stored ``content`` vector is computed from),
as ``POST entries`` judges a new entry against a stored one. A *positive* is a pair the rule
refuses. ``--sweep`` prints the figures at several thresholds (use it on the tuning set only).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from kb.services.duplicates import content_text, is_duplicate_pair  # noqa: E402
from kb.services.embedding import get_embedder  # noqa: E402


def load_pairs(path: Path) -> list[dict]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if "existing" in row:
                row["a"], row["b"] = row.pop("new"), row.pop("existing")
            rows.append(row)
    return rows


def _text(side: dict) -> str:
    return content_text(side.get("title", ""), side.get("summary", ""), side.get("content", ""))


def cosines(pairs: list[dict]) -> list[float]:
    embedder = get_embedder()
    texts = [_text(p["a"]) for p in pairs] + [_text(p["b"]) for p in pairs]
    vectors = embedder.embed(texts)
    n = len(pairs)
    return [sum(x * y for x, y in zip(vectors[i], vectors[n + i], strict=True)) for i in range(n)]


def score(pairs: list[dict], sims: list[float], threshold: float) -> tuple[dict, list[str]]:
    tp = fp = fn = tn = 0
    misses = []
    for pair, sim in zip(pairs, sims, strict=True):
        said = is_duplicate_pair(_text(pair["a"]), _text(pair["b"]), sim, threshold)
        truth = bool(pair["duplicate"])
        tp += said and truth
        fp += said and not truth
        fn += truth and not said
        tn += not said and not truth
        if said != truth:
            misses.append(
                f"{'false refusal' if said else 'missed duplicate'} cos={sim:.3f}: "
                f"{pair['a'].get('title')!r} / {pair['b'].get('title')!r} ({pair.get('why', '')})"
            )
    figures = {
        "pairs": len(pairs),
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / (tp + fn) if tp + fn else 1.0,
        "false_refusals": fp,
        "missed": fn,
    }
    return figures, misses


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=ROOT / "bench/data/duplicates_tuning.jsonl")
    parser.add_argument("--threshold", type=float, default=settings.KB_DUPLICATE_REFUSE_MIN)
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--show", action="store_true", help="print every wrong verdict")
    args = parser.parse_args()
    pairs = load_pairs(args.data)
    sims = cosines(pairs)
    print(f"{args.data.name}: embedder {get_embedder().name}")
    thresholds = [0.85, 0.88, 0.9, 0.92, 0.94, 0.95, 0.96, 0.97, 0.98] if args.sweep else []
    for threshold in thresholds or [args.threshold]:
        figures, misses = score(pairs, sims, threshold)
        print(
            f"threshold {threshold:.2f}  pairs {figures['pairs']}  precision "
            f"{figures['precision']:.3f}  recall {figures['recall']:.3f}  false refusals "
            f"{figures['false_refusals']}  missed {figures['missed']}"
        )
        if args.show:
            print("\n".join(f"  {m}" for m in misses) or "  no wrong verdicts")


if __name__ == "__main__":
    main()
