"""Two invariants of the query answer (issue 21), measured over every bank at hand, with the
real MiniLM model and the default request (limit 8, budget 2,000):

1. **Corrections cannot hide.** For every result of every answer that has a current corrector
   (a current ``corrects`` edge from a live, unexpired entry, read apart from the fold):
   answers ``high`` (must be 0), names a current corrector in ``corrected_by``, and the
   corrector's id appears in the payload (as a result, a pointer, a hop line, a compact pointer
   or ``corrected_by``). The flat answer (``fold: false``) is counted beside it: what an agent
   would have read without the fold.
2. **Redundancy.** Result slots spent on a topic an earlier result already shows (a result
   sharing a current edge with a better-ranked one), flat top 8 against the default fold
   answer (target: a third or less), and the flat top-8 ids the fold's answer loses
   (target: none). Correction pairs (a slot whose only edges to the better-ranked results are
   ``corrects``) are counted apart and left out of the second ratio: a corrector beside what
   it corrects is the opposite of a repeat, and the contract requires it to stand
   (``answers.slots_on_shown_topic``).

Banks: the demo engineering bank (every question of ``bench/data/confidence_questions.jsonl``:
38 written for it, 25 for the search corpus and off-topic there),
a generated bank of the 12 held-out correction pairs (``bench/data/correction_pairs.jsonl``),
each stale entry with three near-duplicate restatements linked to it and each question asked
in two phrasings, the crowded lab bank (``tests/labs/crowded.py``), and the blind crowded-hop
banks (``bench/data/blind/hop``, 30 task questions; reported, never tuned on).

    .venv/bin/python bench/answer_invariants.py [--skip-blind]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

NOT_CURRENT = ("merged", "deleted", "retired", "cancelled")
RESTATEMENTS = ("Reminder: ", "Team note: ", "Heads-up: ")


def current_correctors(bank) -> dict[str, set[str]]:
    from graph.models import Edge

    out: dict[str, set[str]] = {}
    edges = Edge.objects.filter(bank=bank, type__name="corrects", invalidated_at__isnull=True)
    for e in edges.select_related("from_entry", "to_entry"):
        if e.from_entry.status not in NOT_CURRENT and not e.from_entry.is_expired:
            out.setdefault(e.to_entry.short_id, set()).add(e.from_entry.short_id)
    return out


def payload_ids(body: dict) -> set[str]:
    return set(re.findall(r'"([0-9a-f]{8})[" ]', json.dumps(body, ensure_ascii=False)))


def item_ids(body: dict) -> set[str]:
    """Ids the answer hands over as an item (result, pointer, hop line, compact pointer)."""
    out = set()
    for r in body["results"]:
        out.add(r["id"])
        for sub in ("related", "neighbors", "links", "hops"):
            out |= {p["id"] for p in r.get(sub) or ()}
        out |= {c.split()[0] for c in r.get("compact_pointers") or ()}
    return out


def measure(bank, questions: list[str]) -> dict:
    from answers import slots_on_shown_topic

    from graph.retrieval.query import QueryParams, run_query

    correctors = current_correctors(bank)
    c = Counter(questions=len(questions))
    for q in questions:
        flat = run_query(bank, QueryParams(q, fold=False), record=False)
        body = run_query(bank, QueryParams(q), record=False)
        for r in flat["results"]:
            if r["id"] in correctors:
                c["flat_corrected_results"] += 1
                c["flat_corrected_high"] += r["confidence"] == "high"
                c["flat_corrector_visible"] += bool(correctors[r["id"]] & payload_ids(flat))
        for r in body["results"]:
            mine = correctors.get(r["id"])
            if not mine:
                continue
            c["corrected_results"] += 1
            c["corrected_high"] += r["confidence"] == "high"
            c["corrected_by_names_current"] += r["corrected_by"] in mine
            c["corrector_visible"] += bool(mine & payload_ids(body))
            c["corrector_as_item"] += bool(mine & item_ids(body))
        protected = {r["id"] for r in flat["results"][:2]}
        for label, answer in (("flat", flat), ("fold", body)):
            slots = slots_on_shown_topic(bank, answer, protected)
            c[f"{label}_slots_on_shown_topic"] += slots["slots"]
            c[f"{label}_correction_pairs"] += slots["correction_pairs"]
            c[f"{label}_protected_slots"] += slots["protected_slots"]
        c["flat_top8_lost"] += len({r["id"] for r in flat["results"]} - payload_ids(body))
        c["over_2000_tokens"] += body["stats"]["tokens"] > 2000
    return {**c, **ratios(c)}


def ratios(c) -> dict:
    """The redundancy ratio as first defined, and without correction pairs (a corrector
    beside what it corrects: answers.slots_on_shown_topic says why) in either answer."""
    out = {}
    if c["flat_slots_on_shown_topic"]:
        out["redundancy_ratio"] = round(
            c["fold_slots_on_shown_topic"] / c["flat_slots_on_shown_topic"], 3
        )
    repeats = c["flat_slots_on_shown_topic"] - c["flat_correction_pairs"]
    if repeats:
        kept = c["fold_slots_on_shown_topic"] - c["fold_correction_pairs"]
        out["redundancy_ratio_without_correction_pairs"] = round(kept / repeats, 3)
    return out


def corrections_bank():
    """The 12 held-out correction pairs, each stale entry with three near-duplicate
    restatements linked to it (``see_also``, noted), and each question in two phrasings."""
    import secrets

    from graph.edges.links import link
    from kb.models import Entry
    from kb.services.banks import ensure_bank
    from kb.services.embedding import embed_entries
    from kb.services.entries import clean_entry_data, create_entry

    bank, _ = ensure_bank(f"bench-invariants-{secrets.token_hex(3)}", name="bench invariants")
    questions = []

    def make(data):
        data = {**data, "kind": "fact", "lifetime": {"durable": True}}
        return create_entry(bank, clean_entry_data(bank, data), allow_duplicate=True)

    for p in (json.loads(x) for x in (HERE / "data" / "correction_pairs.jsonl").open()):
        stale, corrector = make(p["stale"]), make(p["corrector"])
        link(
            bank,
            {
                "from": corrector.short_id,
                "to": stale.short_id,
                "relation": "corrects",
                "note": p["note"],
            },
        )
        for lead in RESTATEMENTS:
            twin = make({"title": lead + p["stale"]["title"], "content": p["stale"]["content"]})
            link(
                bank,
                {
                    "from": twin.short_id,
                    "to": stale.short_id,
                    "relation": "see_also",
                    "note": "Says the same as the entry it restates.",
                },
            )
        questions += [p["query"], f"{p['stale']['title']}?"]
    embed_entries(Entry.objects.filter(bank=bank))
    return bank, questions


def demo_bank(answers):
    files = [ROOT / "kb/demo/engineering.jsonl", ROOT / "kb/demo/engineering_edges.jsonl"]
    return answers._scratch_bank("bench-ans-demo", files)


def demo_questions(answers) -> list[str]:
    return [q["query"] for q in answers._lines(HERE / "data" / "confidence_questions.jsonl")]


def blind_run(tasks: Path):
    def build():
        import blind

        domain = tasks.name.removesuffix("_tasks.jsonl")
        bank = blind.load_bank(domain, tasks.with_name(f"{domain}.jsonl"))
        return bank, [t["question"] for t in blind._lines(tasks)]

    return build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-blind", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import answers

    from tests.labs.crowded import QUERIES as CROWDED_QUERIES

    runs = [("generated corrections", corrections_bank)]
    runs.append(("crowded lab", lambda: (answers.crowded_bank(), CROWDED_QUERIES)))
    runs.append(("demo eng", lambda: (demo_bank(answers), demo_questions(answers))))
    if not args.skip_blind:
        for tasks in sorted((HERE / "data" / "blind" / "hop").glob("*_tasks.jsonl")):
            runs.append((f"blind {tasks.name.removesuffix('_tasks.jsonl')}", blind_run(tasks)))
    import importlib

    drop_bank = importlib.import_module("bench.import").drop_bank
    total = Counter()
    for label, build in runs:
        bank, questions = build()
        try:
            figures = measure(bank, questions)
            print(json.dumps({label: figures}), flush=True)
        finally:
            drop_bank(bank)
        total.update({k: v for k, v in figures.items() if isinstance(v, int)})
    total = {**total, **ratios(total)}
    print(json.dumps({"all": total}, indent=1))
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
