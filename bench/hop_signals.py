"""Which query-relevance signal can pick B out of a crowded A's neighbours? (issue 15)

Builds the crowded hop lab once per B-text mode (opaque, pertinent) with the real model and,
for every kept task (B not in the flat top-8), ranks A's noted neighbours (B, the tangent and
the crowd) by each candidate signal, offline:

* ``entry``: the neighbour's own vectors against the query (bank-weighted cosine; what step 7
  ranks by today),
* ``note``: the cosine of an embedding of the edge's note against the query (what an
  edge-note embedding would add),
* ``entry + w * note`` for w = 0.5 and 1.0.

It reports how often B lands in the neighbour slots (top 3) under each, and B's cosine against
the best crowd entry's and note's. Nothing is built into the product by this script.

(``bench/hop_crowded.py`` prints the same report for its crowded banks.)

    .venv/bin/python bench/hop_signals.py [--tasks 30] [--crowd 10] [--order before]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

SLOTS = 3
DIMENSIONS = ("content", "useful_for", "context")


def _weighted(emb, against, weights: dict[str, float]) -> float:
    """Bank-weighted cosine of ``emb``'s vectors against ``against(dimension)``, over the
    dimensions where both have a vector (0 when none)."""
    if emb is None:
        return 0.0
    num = den = 0.0
    for d in DIMENSIONS:
        v, w = getattr(emb, d), against(d)
        if v is None or w is None:
            continue
        v, w = np.asarray(v, dtype=float), np.asarray(w, dtype=float)
        norms = np.linalg.norm(v) * np.linalg.norm(w)
        num += weights[d] * (float(v @ w / norms) if norms else 0.0)
        den += weights[d]
    return num / den if den else 0.0


def weighted_cosine(emb, q: np.ndarray, weights: dict[str, float]) -> float:
    """The neighbour's vectors against the query vector (what step 7 ranks by)."""
    return _weighted(emb, lambda _d: q, weights)


def pair_cosine(emb, other, weights: dict[str, float]) -> float:
    """Two entries' vectors, dimension by dimension (0 without)."""
    if other is None:
        return 0.0
    return _weighted(emb, lambda d: getattr(other, d), weights)


def signal_report(bank, tasks) -> dict:
    """Rank each kept task's A neighbours by every candidate signal (see the module docstring)."""
    from graph.models import Edge
    from graph.retrieval.query import QueryParams, run_query
    from kb.models import EntryEmbedding
    from kb.services.embedding import embed_query, get_embedder

    embedder = get_embedder()
    weights = bank.dimension_weights()
    signals = {
        "entry": lambda r: r[1],
        "note": lambda r: r[2],
        "entry+0.5note": lambda r: r[1] + 0.5 * r[2],
        "entry+1.0note": lambda r: r[1] + 1.0 * r[2],
        "result": lambda r: r[3],
        "entry+0.5result": lambda r: r[1] + 0.5 * r[3],
        "entry+1.0result": lambda r: r[1] + 1.0 * r[3],
    }
    hits = dict.fromkeys(signals, 0)
    kept = b_entry_above = b_note_above = 0
    gaps = []
    for t in tasks:
        qv = embed_query(t.query)
        flat = run_query(bank, QueryParams(t.query, fold=False), record=False, query_vector=qv)
        if t.b.short_id in {r["id"] for r in flat["results"]}:
            continue
        kept += 1
        q = np.asarray(qv, dtype=float)
        edges = [
            e
            for e in Edge.objects.filter(bank=bank, invalidated_at=None, from_entry=t.a).union(
                Edge.objects.filter(bank=bank, invalidated_at=None, to_entry=t.a)
            )
            if e.note
        ]
        others = [e.to_entry_id if e.from_entry_id == t.a.pk else e.from_entry_id for e in edges]
        embs = {
            e.entry_id: e for e in EntryEmbedding.objects.filter(entry_id__in=[*others, t.a.pk])
        }
        notes = embedder.embed([e.note for e in edges])
        rows = []
        for other, note_v in zip(others, notes, strict=True):
            nv = np.asarray(note_v, dtype=float)
            note_cos = float(nv @ q / (np.linalg.norm(nv) * np.linalg.norm(q)))
            rows.append(
                (
                    other,
                    weighted_cosine(embs[other], q, weights),
                    note_cos,
                    pair_cosine(embs.get(other), embs.get(t.a.pk), weights),
                )
            )
        b_row = next(r for r in rows if r[0] == t.b.pk)
        crowd_rows = [r for r in rows if r[0] not in (t.b.pk, t.tangent.pk)]
        best_entry = max(r[1] for r in crowd_rows)
        best_note = max(r[2] for r in crowd_rows)
        b_entry_above += b_row[1] > best_entry
        b_note_above += b_row[2] > best_note
        gaps.append(b_row[1] - best_entry)
        for name, score in signals.items():
            order = sorted(rows, key=score, reverse=True)
            hits[name] += t.b.pk in [r[0] for r in order[:SLOTS]]
    return {
        "tasks_kept": kept,
        "b_entry_cosine_above_best_crowd": b_entry_above,
        "b_note_cosine_above_best_crowd_note": b_note_above,
        "b_minus_best_crowd_entry_cosine_median": round(float(np.median(gaps)), 3)
        if gaps
        else None,
        **{f"b_in_top{SLOTS}_by_{k}": v for k, v in hits.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=30)
    parser.add_argument("--crowd", type=int, default=10)
    parser.add_argument("--order", choices=["before", "after"], default="before")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from kb import audit
    from kb.models import Entry
    from kb.services.banks import ensure_bank
    from kb.services.embedding import embed_entries
    from tests.labs import hoplab

    for mode in hoplab.B_TEXTS:
        crowd = hoplab.Crowd(args.crowd, 0.5, args.order, mode)
        bank, _ = ensure_bank(f"hop-signals-{secrets.token_hex(3)}", name="hop signals (scratch)")
        try:
            with audit.acting_as("hop_signals"):
                tasks = hoplab.build_tasks(bank, args.tasks, args.seed, crowd)
            embed_entries(Entry.objects.filter(bank=bank))
            print(json.dumps({"b_text": mode, **signal_report(bank, tasks)}), flush=True)
        finally:
            bank.delete()


if __name__ == "__main__":
    main()
