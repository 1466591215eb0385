"""Answer-quality figures of the fold (issue 16), with the real MiniLM model:

1. Confidence: the best result's relevance on labelled questions the bank can and cannot
   answer (``bench/data/confidence_questions.jsonl`` plus ``tests/data/search_queries.jsonl``),
   how ``no_good_match`` separates them at the bank's floor, and the sweep of floors.
2. Corrections: a held-out set of (stale, corrector) pairs (``bench/data/correction_pairs.jsonl``)
   in a scratch bank; a pair passes when the corrector ranks before the stale entry or the
   stale entry carries ``corrected_by``.
3. Economy: tokens of the default fold answer (limit 8) on the demo engineering bank, for
   the questions it can answer and for those it cannot, per question: the pointers
   (related + neighbours + links) of the unbounded answer whose id no longer appears anywhere
   in the default one, results dropped, pointers compacted; and every budget honoured
   (200 … 3,000 and the default).
4. Redundancy: result slots spent on a topic an earlier result already shows (a current edge
   to a better-ranked result), flat top-8 against the default fold answer, and the flat
   top-8 ids the fold's answer loses.

    .venv/bin/python bench/answers.py [--keep] [--only economy]
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
            ends[role] = create_entry(bank, clean_entry_data(bank, data), allow_duplicate=True)
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


def pointer_ids(body: dict) -> set[str]:
    """Ids an answer points at: its results' related, neighbours and links."""
    return {
        p["id"]
        for r in body["results"]
        for sub in ("related", "neighbors", "links")
        for p in r.get(sub) or ()
    }


def answer_ids(body: dict) -> set[str]:
    """Every id that appears anywhere in an answer (results, pointers, via, corrected_by…)."""
    text = json.dumps(body, ensure_ascii=False)
    return set(re.findall(r'"([0-9a-f]{8})[" ]', text))


def economy(bank, queries: list[str] | None = None) -> dict:
    """Tokens of the default answer (limit 8) and what its budget cost, per question: the
    pointers (related + neighbours + links) of the unbounded answer whose id no longer appears
    anywhere in the default one, and results dropped; then every budget honoured."""
    from graph.retrieval.budget import estimate_tokens
    from graph.retrieval.query import QueryParams, run_query

    if queries is None:
        queries = [
            q["query"]
            for q in _lines(HERE / "data" / "confidence_questions.jsonl")
            if q["bank"] == "demo" and q["answerable"]
        ]
    rows = []
    for q in queries:
        unbounded = run_query(bank, QueryParams(q, budget_tokens=200_000), record=False)
        default = run_query(bank, QueryParams(q), record=False)
        wanted = pointer_ids(unbounded) | {r["id"] for r in unbounded["results"]}
        lost = wanted - answer_ids(default)
        stats = default["stats"]
        rows.append(
            {
                "q": q[:48],
                "unbounded": estimate_tokens(unbounded),
                "default": estimate_tokens(default),
                "pointers": len(pointer_ids(unbounded)),
                "pointers_lost": len(lost - {r["id"] for r in unbounded["results"]}),
                "results": len(unbounded["results"]),
                "results_dropped": len(unbounded["results"]) - len(default["results"]),
                "contents_cut": stats.get("contents_cut"),
                "pointers_compacted": stats.get("pointers_compacted"),
                "dropped_pointers": stats.get("dropped_pointers"),
                # the measure before compact separators (", " and ": "), for comparison
                "unbounded_spaced": -(-len(json.dumps(unbounded, ensure_ascii=False)) // 4),
            }
        )
    over, checked = 0, 0
    for budget in (200, 300, 400, 600, 800, 1200, 1500, 2000, 3000, None):
        for q in queries:
            body = run_query(bank, QueryParams(q, budget_tokens=budget), record=False)
            over += estimate_tokens(body) > body["stats"]["budget_tokens"]
            checked += 1
    compact = run_query(bank, QueryParams(queries[0], compact=True), record=False)
    n = len(rows)
    return {
        "queries": n,
        "unbounded_tokens_mean_max": (
            round(sum(r["unbounded"] for r in rows) / n),
            max(r["unbounded"] for r in rows),
        ),
        "default_tokens_mean_max": (
            round(sum(r["default"] for r in rows) / n),
            max(r["default"] for r in rows),
        ),
        "pointers_in_unbounded": sum(r["pointers"] for r in rows),
        "unbounded_spaced_tokens_mean": round(sum(r["unbounded_spaced"] for r in rows) / n),
        "pointers_lost_by_default_budget": sum(r["pointers_lost"] for r in rows),
        "pointers_compacted_by_default_budget": sum(r["pointers_compacted"] or 0 for r in rows),
        "questions_with_contents_cut": sum(1 for r in rows if r["contents_cut"]),
        "results_dropped_by_default_budget": sum(r["results_dropped"] for r in rows),
        "responses_over_budget": f"{over} of {checked}",
        "compact_tokens_first_query": estimate_tokens(compact),
        "per_question": rows,
    }


def slots_on_shown_topic(bank, body: dict, protected: set[str] = frozenset()) -> dict:
    """Result slots of an answer spent on a topic a better-ranked result already shows (the
    slot's entry shares a current edge with it), split by why the slot stands:

    - ``slots``: every such slot (the measure as first defined);
    - ``correction_pairs``: slots whose only edges to the better-ranked results are
      ``corrects`` edges: a correction beside what it corrects. Not a repeat of the topic but
      its opposite, and one the contract requires to stand (API.md "Changes", Corrections:
      a corrected result's corrector is never folded away under another result, and it
      ranks first); the rest, ``slots - correction_pairs``, is the measure that counts;
    - ``protected_slots``: slots among the rest held by one of the ``protected`` ids (the
      pool's top two, which API.md's step 4 always emits as themselves, whatever they link
      to). In a fold answer every other slot on a shown topic would be the fold's own choice;
      the fold's groups leave none (tuning banks, README)."""
    from graph.retrieval.fold import edges_among
    from kb.models import Entry

    shorts = [r["id"] for r in body["results"]]
    pk = dict(Entry.objects.filter(bank=bank, short_id__in=shorts).values_list("short_id", "pk"))
    short_of = {v: k for k, v in pk.items()}
    ids = [pk[x] for x in shorts]
    relations: dict[tuple[int, int], set[str]] = {}
    for e in edges_among(bank, ids).edges:
        for a, b in ((e.source, e.target), (e.target, e.source)):
            relations.setdefault((a, b), set()).add(e.relation)
    out = {"slots": 0, "correction_pairs": 0, "protected_slots": 0}
    for i, a in enumerate(ids):
        shown = [b for b in ids[:i] if (a, b) in relations]
        if not shown:
            continue
        out["slots"] += 1
        if all(relations[a, b] == {"corrects"} for b in shown):
            out["correction_pairs"] += 1
        elif short_of[a] in protected:
            out["protected_slots"] += 1
    return out


def redundancy(bank, queries: list[str]) -> dict:
    """Slots spent on a topic already shown (:func:`slots_on_shown_topic`), flat top-8
    against the default fold answer; and what the fold loses (a flat top-8 id that appears
    nowhere in the fold's answer)."""
    from collections import Counter

    from graph.retrieval.query import QueryParams, run_query

    flat_c, fold_c, lost = Counter(), Counter(), 0
    for q in queries:
        flat = run_query(bank, QueryParams(q, fold=False), record=False)
        folded = run_query(bank, QueryParams(q), record=False)
        protected = {r["id"] for r in flat["results"][:2]}
        flat_c.update(slots_on_shown_topic(bank, flat, protected))
        fold_c.update(slots_on_shown_topic(bank, folded, protected))
        lost += len({r["id"] for r in flat["results"]} - answer_ids(folded))
    return {
        "queries": len(queries),
        "flat_slots_on_a_shown_topic": flat_c["slots"],
        "fold_slots_on_a_shown_topic": fold_c["slots"],
        "ratio": round(fold_c["slots"] / flat_c["slots"], 3) if flat_c["slots"] else None,
        "flat_correction_pairs": flat_c["correction_pairs"],
        "fold_correction_pairs": fold_c["correction_pairs"],
        "ratio_without_correction_pairs": _ratio_without_pairs(flat_c, fold_c),
        "fold_protected_slots": fold_c["protected_slots"],
        "flat_top8_ids_lost_by_fold": lost,
    }


def _ratio_without_pairs(flat: dict, fold: dict) -> float | None:
    """Fold slots on a shown topic over the flat answer's, correction pairs left out of both."""
    denominator = flat["slots"] - flat["correction_pairs"]
    if not denominator:
        return None
    return round((fold["slots"] - fold["correction_pairs"]) / denominator, 3)


def crowded_bank():
    """The crowded bank of tests/labs/crowded.py with real vectors; the relevance floor off so
    every slot fills (the harder case for the budget)."""
    import secrets

    from kb.models import Entry
    from kb.services.banks import ensure_bank
    from kb.services.bulk import import_bank
    from kb.services.embedding import embed_entries
    from tests.labs.crowded import crowded_lines

    bank, _ = ensure_bank(f"bench-crowd-{secrets.token_hex(3)}", name="bench crowded")
    lines = "\n".join(json.dumps(x) for x in crowded_lines())
    import_bank(bank, lines, reason="bench answers", embed=False)
    embed_entries(Entry.objects.filter(bank=bank))
    bank.settings = {**bank.settings, "relevance_floor": 0.0}
    bank.save()
    return bank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--only",
        choices=["confidence", "corrections", "economy", "crowded", "redundancy"],
        action="append",
        default=None,
    )
    args = parser.parse_args()
    parts = set(args.only or ("confidence", "corrections", "economy", "crowded", "redundancy"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from kb.models import Bank
    from tests.labs.crowded import QUERIES as CROWDED_QUERIES

    banks = {
        "demo": _scratch_bank(
            "bench-ans-demo",
            [ROOT / "kb/demo/engineering.jsonl", ROOT / "kb/demo/engineering_edges.jsonl"],
        ),
    }
    if "confidence" in parts:
        corpus = [ROOT / "tests/data/search_corpus.jsonl"]
        banks["corpus"] = _scratch_bank("bench-ans-corpus", corpus)
        print(json.dumps({"confidence": confidence(banks)}, indent=1))
    if "corrections" in parts:
        print(json.dumps({"corrections": corrections()}, indent=1))
    if "economy" in parts:
        demo = [
            q for q in _lines(HERE / "data" / "confidence_questions.jsonl") if q["bank"] == "demo"
        ]
        for label, answerable in (("answerable", True), ("unanswerable", False)):
            asked = [q["query"] for q in demo if q["answerable"] is answerable]
            print(json.dumps({f"economy_{label}": economy(banks["demo"], asked)}, indent=1))
    if "crowded" in parts:
        print(json.dumps({"economy_crowded": economy(crowded_bank(), CROWDED_QUERIES)}, indent=1))
    if "redundancy" in parts:
        asked = [
            q["query"]
            for q in _lines(HERE / "data" / "confidence_questions.jsonl")
            if q["bank"] == "demo" and q["answerable"]
        ]
        print(json.dumps({"redundancy_demo": redundancy(banks["demo"], asked)}, indent=1))
        crowd = crowded_bank()
        print(json.dumps({"redundancy_crowded": redundancy(crowd, CROWDED_QUERIES)}, indent=1))
    if not args.keep:
        import importlib

        drop_bank = importlib.import_module("bench.import").drop_bank
        prefixes = ("bench-ans-corpus-", "bench-ans-demo-", "bench-corrections-", "bench-crowd-")
        for prefix in prefixes:
            for bank in Bank.objects.filter(slug__startswith=prefix):
                drop_bank(bank)


if __name__ == "__main__":
    main()
