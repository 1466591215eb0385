"""Answer-quality figures of the fold (issue 16), with the real MiniLM model:

1. Confidence: the best result's relevance on labelled questions the bank can and cannot
   answer (``bench/data/confidence_questions.jsonl`` plus ``tests/data/search_queries.jsonl``),
   how ``no_good_match`` separates them at the bank's floor, and the sweep of floors.
2. Corrections: a held-out set of (stale, corrector) pairs (``bench/data/correction_pairs.jsonl``)
   in a scratch bank; a pair passes when the corrector ranks before the stale entry or the
   stale entry carries ``corrected_by``.
3. Economy: tokens of the default fold answer (limit 8) on the demo engineering bank, with
   the pointers counted before and after the default budget, and every budget honoured.

    .venv/bin/python bench/answers.py [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _scratch_bank(slug: str, files: list[Path]):
    import secrets

    from kb.services.banks import ensure_bank
    from kb.services.bulk import import_bank

    bank, _ = ensure_bank(f"{slug}-{secrets.token_hex(3)}", name=f"bench {slug}")
    for f in files:
        import_bank(bank, f.read_text(), reason="bench answers")
    return bank


def confidence(banks: dict) -> dict:
    from graph.retrieval.answer import floors
    from graph.retrieval.query import QueryParams, run_query

    rows = []
    for q in _lines(HERE / "data" / "confidence_questions.jsonl"):
        rows.append((q["bank"], q["query"], q["answerable"]))
    for q in _lines(ROOT / "tests" / "data" / "search_queries.jsonl"):
        rows.append(("corpus", q["query"], True))
    out = []
    for bank_name, query, answerable in rows:
        body = run_query(banks[bank_name], QueryParams(query), record=False)
        top = max((r["relevance"] for r in body["results"]), default=0.0)
        out.append((answerable, top, body["no_good_match"], body["results"][0]["confidence"]))
    floor, high, _ = floors(banks["corpus"])
    ans = [r for r in out if r[0]]
    una = [r for r in out if not r[0]]
    summary = {
        "questions": len(out),
        "answerable": len(ans),
        "unanswerable": len(una),
        "floor": floor,
        "high": high,
        "unanswerable_flagged_no_good_match_pct": round(100 * sum(r[2] for r in una) / len(una), 1),
        "answerable_wrongly_flagged_pct": round(100 * sum(r[2] for r in ans) / len(ans), 1),
        "answerable_top_confidence": {
            b: sum(1 for r in ans if r[3] == b) for b in ("high", "medium", "low")
        },
        "unanswerable_top_confidence": {
            b: sum(1 for r in una if r[3] == b) for b in ("high", "medium", "low")
        },
        "top_relevance_answerable_min_median": (
            round(min(r[1] for r in ans), 3),
            round(sorted(r[1] for r in ans)[len(ans) // 2], 3),
        ),
        "top_relevance_unanswerable_median_max": (
            round(sorted(r[1] for r in una)[len(una) // 2], 3),
            round(max(r[1] for r in una), 3),
        ),
    }
    sweep = []
    for f in [x / 100 for x in range(30, 56, 2)]:
        tp = sum(1 for r in una if r[1] < f)
        fp = sum(1 for r in ans if r[1] < f)
        sweep.append((f, tp, fp))
    summary["sweep_floor_unanswerable_caught_answerable_lost"] = sweep
    return summary


def corrections() -> dict:
    import secrets

    from graph.edges.links import link
    from graph.retrieval.query import QueryParams, run_query
    from kb.models import Entry
    from kb.services.banks import ensure_bank
    from kb.services.embedding import embed_entries
    from kb.services.entries import clean_entry_data, create_entry

    bank, _ = ensure_bank(f"bench-corrections-{secrets.token_hex(3)}", name="bench corrections")
    pairs = _lines(HERE / "data" / "correction_pairs.jsonl")
    made = []
    for p in pairs:
        ends = {}
        for role in ("stale", "corrector"):
            data = {**p[role], "kind": "fact", "lifetime": {"durable": True}}
            ends[role] = create_entry(bank, clean_entry_data(bank, data))
        link(
            bank,
            {
                "from": ends["corrector"].short_id,
                "to": ends["stale"].short_id,
                "relation": "corrects",
                "note": p["note"],
            },
        )
        made.append((p["query"], ends["stale"].short_id, ends["corrector"].short_id))
    embed_entries(Entry.objects.filter(bank=bank))
    passed, flat_stale_first, detail = 0, 0, []
    for query, stale, corrector in made:
        flat = [
            r["id"]
            for r in run_query(bank, QueryParams(query, fold=False), record=False)["results"]
        ]
        if stale in flat and (corrector not in flat or flat.index(stale) < flat.index(corrector)):
            flat_stale_first += 1
        body = run_query(bank, QueryParams(query), record=False)
        ids = [r["id"] for r in body["results"]]
        stale_item = next((r for r in body["results"] if r["id"] == stale), None)
        ok = (
            corrector in ids and (stale not in ids or ids.index(corrector) < ids.index(stale))
        ) or (stale_item is not None and stale_item["corrected_by"] == corrector)
        passed += ok
        detail.append((query[:40], ids.index(stale) + 1 if stale in ids else None, ok))
    return {
        "pairs": len(made),
        "flat_ranks_stale_first": flat_stale_first,
        "fold_corrector_first_or_flagged": passed,
        "detail": detail,
    }


def economy(bank) -> dict:
    from graph.retrieval.answer import estimate_tokens
    from graph.retrieval.query import QueryParams, run_query

    queries = [
        q["query"]
        for q in _lines(HERE / "data" / "confidence_questions.jsonl")
        if q["bank"] == "demo" and q["answerable"]
    ]
    rows = []
    for q in queries:
        unbounded = run_query(bank, QueryParams(q, budget_tokens=1_000_000), record=False)
        default = run_query(bank, QueryParams(q), record=False)
        pointers = lambda b: sum(len(r["related"]) + len(r["neighbors"]) for r in b["results"])  # noqa: E731
        rows.append(
            (
                estimate_tokens(unbounded),
                estimate_tokens(default),
                pointers(unbounded),
                pointers(default),
                len(unbounded["results"]),
                len(default["results"]),
            )
        )
    over = 0
    for budget in (200, 400, 800, 1500, 3000):
        for q in queries:
            body = run_query(bank, QueryParams(q, budget_tokens=budget), record=False)
            over += estimate_tokens(body) > budget
        compact = run_query(bank, QueryParams(queries[0], compact=True), record=False)
    n = len(rows)
    return {
        "queries": n,
        "unbounded_tokens_mean_max": (round(sum(r[0] for r in rows) / n), max(r[0] for r in rows)),
        "default_tokens_mean_max": (round(sum(r[1] for r in rows) / n), max(r[1] for r in rows)),
        "pointers_lost_by_default_budget": sum(r[2] - r[3] for r in rows),
        "results_lost_by_default_budget": sum(r[4] - r[5] for r in rows),
        "responses_over_budget_of_5_budgets": over,
        "compact_tokens_first_query": estimate_tokens(compact),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from kb.models import Bank

    banks = {
        "corpus": _scratch_bank("bench-ans-corpus", [ROOT / "tests/data/search_corpus.jsonl"]),
        "demo": _scratch_bank(
            "bench-ans-demo",
            [ROOT / "kb/demo/engineering.jsonl", ROOT / "kb/demo/engineering_edges.jsonl"],
        ),
    }
    print(json.dumps({"confidence": confidence(banks)}, indent=1))
    print(json.dumps({"corrections": corrections()}, indent=1))
    print(json.dumps({"economy": economy(banks["demo"])}, indent=1))
    if not args.keep:
        Bank.objects.filter(
            slug__in=["bench-ans-corpus", "bench-ans-demo", "bench-corrections"]
        ).delete()


if __name__ == "__main__":
    main()
