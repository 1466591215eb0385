"""The token budget of a query answer (issue 16 item 3) on a crowded bank generated for the
test (tests/labs/crowded.py): long entries, long notes, dense noted edges, playbooks with
steps. The default answer (limit 8)
fits 2,000 tokens with every result and every pointer id of the unbounded answer; no
response exceeds its budget, counted as the server counts (and on the bytes REST sends); what
does not fit is accounted for in ``stats``."""

import json
import random
import re

import pytest
from django.db import connection

from graph.models import Edge
from graph.retrieval.budget import COMPACT, estimate_tokens, fit_budget, render
from graph.retrieval.query import QueryParams, run_query
from kb.models import Entry, EntryEmbedding
from kb.services.bulk import import_bank
from kb.services.embedding import embed_entries
from tests.labs.crowded import QUERIES, RELATIONS, crowded_lines, text

pytestmark = pytest.mark.django_db


@pytest.fixture
def crowded(bank, hashing_embedder):
    """The crowded bank of tests/labs/crowded.py (120 long entries, dense long notes), with
    the relevance floor off so every slot fills."""
    lines = crowded_lines()
    result = import_bank(bank, "\n".join(json.dumps(x) for x in lines), embed=False)
    assert not result.get("errors"), result
    embed_entries(Entry.objects.filter(bank=bank))
    with connection.cursor() as cursor:  # plans for this bank's size, not an empty table's
        for model in (Entry, Edge, EntryEmbedding):
            cursor.execute(f"ANALYZE {model._meta.db_table}")
    bank.settings = {"relevance_floor": 0.0}
    bank.save()
    return bank


def pointer_entries(body: dict) -> list[str]:
    """The id of every pointer (related, neighbours, links, compact) of an answer."""
    ids = [
        p["id"]
        for r in body["results"]
        for sub in ("related", "neighbors", "links")
        for p in r[sub]
    ]
    return ids + [s.split()[0] for r in body["results"] for s in r.get(COMPACT, ())]


def ids_in(body: dict) -> set[str]:
    return set(re.findall(r'"([0-9a-f]{8})[" ]', render(body)))


def test_default_answer_keeps_every_pointer_within_2000_tokens(crowded):
    pressed = 0
    for query in QUERIES:
        unbounded = run_query(crowded, QueryParams(query, budget_tokens=200_000), record=False)
        default = run_query(crowded, QueryParams(query), record=False)
        assert default["stats"]["budget_tokens"] == 2000
        assert estimate_tokens(default) <= 2000 and default["stats"]["tokens"] <= 2000
        wanted = set(pointer_entries(unbounded)) | {r["id"] for r in unbounded["results"]}
        assert wanted <= ids_in(default), query  # no pointer, no result lost
        assert [r["id"] for r in default["results"]] == [r["id"] for r in unbounded["results"]]
        assert default["stats"]["dropped_pointers"] == 0
        assert default["stats"]["results_cut"] == 0
        # every pointer entry is still there, whole or compact, with its relation
        assert sorted(pointer_entries(default)) == sorted(pointer_entries(unbounded))
        pressed += estimate_tokens(unbounded) > 4000 and len(pointer_entries(unbounded)) >= 20
    assert pressed >= 3  # the bank is crowded enough for the budget to bite


def test_compact_pointers_keep_id_relation_and_direction(crowded):
    query = QUERIES[0]
    unbounded = run_query(crowded, QueryParams(query, budget_tokens=200_000), record=False)
    tight = run_query(crowded, QueryParams(query, budget_tokens=1200), record=False)
    whole = {
        (p["id"], p["relation"], p["direction"])
        for r in unbounded["results"]
        for sub in ("related", "neighbors", "links")
        for p in r[sub]
    }
    compact = [s for r in tight["results"] for s in r.get(COMPACT, ())]
    assert compact and tight["stats"]["pointers_compacted"] == len(compact)
    for short in compact:
        head, _, note_words = short.partition(": ")  # the note's first words follow
        pointer_id, relation, direction, kind = head.split()
        assert (pointer_id, relation, direction) in whole
        assert kind in ("folded", "neighbor", "link")
    assert all(r["truncated"] and r["content"] == "" for r in tight["results"])


@pytest.mark.parametrize("limit,neighbors", [(8, 3), (8, 20), (20, 5), (1, 3)])
def test_no_response_exceeds_its_budget(crowded, limit, neighbors):
    budgets = [*range(200, 3001, 100), None]
    full_of = {
        query: run_query(
            crowded,
            QueryParams(query, limit=limit, neighbors=neighbors, budget_tokens=200_000),
            record=False,
        )
        for query in QUERIES
    }
    for i, budget in enumerate(budgets):
        query = QUERIES[i % len(QUERIES)]
        params = QueryParams(query, limit=limit, neighbors=neighbors, budget_tokens=budget)
        body = run_query(crowded, params, record=False)
        stats = body["stats"]
        assert estimate_tokens(body) == stats["tokens"] <= stats["budget_tokens"], budget
        if budget is not None:
            assert stats["budget_tokens"] == budget
        # what left the answer is accounted for: entries kept + dropped = entries unbounded
        full = full_of[query]
        kept = len(pointer_entries(body))
        assert kept + stats["dropped_pointers"] == len(pointer_entries(full))
        assert len(body["results"]) + stats["results_cut"] == len(full["results"])
        assert body["results"] or budget is not None


def test_budget_holds_on_the_bytes_rest_sends(crowded, client_rw):
    url = f"/api/v1/banks/{crowded.slug}/query"
    for budget in (200, 450, 1000, 2000, None):
        payload = {"query": QUERIES[1], "neighbors": 10}
        if budget:
            payload["budget_tokens"] = budget
        response = client_rw.post(url, payload, format="json")
        assert response.status_code == 200
        body = response.json()
        sent = -(-len(response.content.decode()) // 4)
        assert sent <= body["stats"]["budget_tokens"]
        assert sent == body["stats"]["tokens"]


def test_a_very_long_question_still_fits_the_smallest_budget(crowded):
    query = " ".join(QUERIES) * 40  # about 9,000 characters echoed back
    body = run_query(crowded, QueryParams(query, budget_tokens=200), record=False)
    assert estimate_tokens(body) <= 200
    assert body["stats"]["results_cut"] >= 1 and body["query"].endswith("…")


# --- the ladder on synthetic answers: what goes first ---------------------------------------


def _synthetic(rng: random.Random) -> dict:
    def pointer(kind: str) -> dict:
        item = {
            "id": f"{rng.getrandbits(32):08x}",
            "relation": rng.choice(RELATIONS),
            "direction": rng.choice(["in", "out"]),
            "kind": kind,
            "note": text(rng, rng.randint(0, 60)),
            "summary": text(rng, rng.randint(0, 50)),
            "title": text(rng, rng.randint(3, 20)),
            "status": "live",
        }
        if rng.random() < 0.2:
            item["steps"] = [text(rng, 20) for _ in range(4)]
        if kind == "folded":
            item["via"] = None
        return item

    results = []
    for rank in range(1, rng.randint(1, 12) + 1):
        results.append(
            {
                "id": f"{rng.getrandbits(32):08x}",
                "title": text(rng, rng.randint(3, 30)),
                "summary": text(rng, rng.randint(0, 60)),
                "content": text(rng, rng.randint(0, 900)),
                "useful_for": text(rng, rng.randint(0, 60)),
                "steps": [text(rng, 25) for _ in range(5)] if rng.random() < 0.2 else None,
                "rank": rank,
                "truncated": False,
                "related": [pointer("folded") for _ in range(rng.randint(0, 6))],
                "neighbors": [pointer("neighbor") for _ in range(rng.randint(0, 5))],
                "links": [
                    {"id": "0badc0de", "relation": "see_also", "direction": "in", "note": "x" * 50}
                    for _ in range(rng.randint(0, 2))
                ],
            }
        )
    return {"query": "q", "results": results, "stats": {"tokens": 99999}}


def test_the_ladder_cuts_text_before_pointers_and_pointers_before_ids():
    rng = random.Random(3)
    for case in range(150):
        body = _synthetic(rng)
        before = len(pointer_entries(body))
        budget = rng.choice([200, 300, 500, 800, 1200, 2000, 3000])
        report = fit_budget(body, budget)
        assert estimate_tokens(body) <= budget, case
        results = body["results"]
        assert len(pointer_entries(body)) + report["dropped_pointers"] == before
        compacted = any(r.get(COMPACT) for r in results)
        verbose = any(r[sub] for r in results for sub in ("related", "neighbors", "links"))
        if compacted or report["dropped_pointers"]:  # content and steps went first
            assert all(r["content"] == "" and not r["steps"] for r in results), case
            assert all("steps" not in p for r in results for p in r["related"] + r["neighbors"])
        if report["dropped_pointers"]:  # ids leave only when no whole pointer is left
            assert not verbose, case
        if report["results_cut"]:  # a result goes only when no whole pointer is left
            assert not verbose, case
            # and only when the results would not fit even without any pointer
            rest = [{**r, COMPACT: []} for r in results]
            assert estimate_tokens({**body, "results": rest}) > budget - 120, case


def test_every_rung_reports_the_size_change_it_made():
    """The ladder keeps the body's size from the rungs' own deltas: each must equal what
    re-rendering the result shows, escapes and line separators included."""
    from graph.retrieval import budget

    rng = random.Random(11)
    odd = ['"quoted"', "back\\slash", "tab\there", "sep\u2028line", "naïve ünïcode", "line\nbreak"]
    applied = 0
    for case in range(120):
        body = _synthetic(rng)
        for item in body["results"]:
            for holder in [item, *item["related"], *item["neighbors"], *item["links"]]:
                for name in ("note", "summary", "title", "content"):
                    if isinstance(holder.get(name), str) and rng.random() < 0.3:
                        holder[name] = rng.choice(odd) + " " + holder[name] + rng.choice(odd)
        report = {"pointers_compacted": 0}
        for rung in budget.RUNGS:
            for item in reversed(body["results"]):
                before = budget._chars(item)
                delta = rung(item, rng.choice([0, 40, 400, 4000]), report)
                assert delta == budget._chars(item) - before, (case, rung.__name__)
                applied += delta != 0
    assert applied > 500  # the rungs did cut, so the deltas were tested on real edits


def test_the_token_figure_counts_itself():
    from graph.retrieval.budget import settle_tokens

    rng = random.Random(5)
    for _ in range(200):
        body = _synthetic(rng)
        body["stats"]["tokens"] = rng.choice([0, 7, 99999])
        settle_tokens(body, body["stats"])
        assert body["stats"]["tokens"] == estimate_tokens(body)
