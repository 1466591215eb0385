"""What the answer carries (issue 21): hybrid by default with exact lexical hits counted,
hop lines past the neighbour slots, corrections that cannot hide, and a budget that keeps
notes longest."""

from __future__ import annotations

import random

import pytest

from graph.retrieval import query as query_service
from graph.retrieval.budget import COMPACT, ELLIPSIS, estimate_tokens, fit_budget
from graph.retrieval.fold import PoolEdge, fold_pool
from graph.retrieval.query import QueryParams, run_query
from graph.retrieval.query_input import QueryRequestSerializer
from kb.models import Entry
from kb.services.embedding import embed_entries
from kb.services.search import ScoredEntry
from tests.graph.ranking_support import ranked_and_embedded

pytestmark = pytest.mark.django_db


@pytest.fixture
def ranked(monkeypatch, hashing_embedder):
    """Fix the flat ranking: ``ranked(*entries, relevance={pk: r}, lexical={pk: score})``."""

    def use(*entries, relevance=None, lexical=None):
        def fake_rank(bank, query, *, limit, **_):
            hits = []
            for i, e in enumerate(entries):
                rel = (relevance or {}).get(e.pk, 0.6)
                lex = (lexical or {}).get(e.pk)
                hits.append(ScoredEntry(e.pk, 1.0 - i / 100, rel, rel, lex, ["vector"], i + 1))
            return hits[:limit]

        monkeypatch.setattr(query_service, "rank_and_embed", ranked_and_embedded(fake_rank))

    return use


def by_id(body):
    return {r["id"]: r for r in body["results"]}


# --- hybrid by default -----------------------------------------------------------------------


def test_lexical_is_on_by_default():
    assert QueryParams("x").lexical is True
    assert QueryRequestSerializer().fields["lexical"].default is True


def test_an_exact_keyword_hit_answers_and_is_never_low(bank, make_entry, hashing_embedder):
    target = make_entry(
        "Deploy a hotfix with the deploy train",
        content="Cut a hotfix branch, tag it and let the train roll it out.",
    )
    for i in range(12):
        make_entry(f"Unrelated recipe {i} about quarterly budgets and seating plans")
    embed_entries(Entry.objects.filter(bank=bank), embedder=hashing_embedder)
    bank.settings = {**bank.settings, "relevance_floor": 0.99, "confidence_high": 0.995}
    bank.save()
    vectors_only = run_query(bank, QueryParams("hotfix", lexical=False), record=False)
    assert vectors_only["no_good_match"] is True  # the floor is out of the vectors' reach
    hybrid = run_query(bank, QueryParams("hotfix"), record=False)
    top3 = [r["id"] for r in hybrid["results"][:3]]
    assert target.short_id in top3
    assert hybrid["no_good_match"] is False
    assert by_id(hybrid)[target.short_id]["confidence"] in ("medium", "high")
    assert "lexical" in by_id(hybrid)[target.short_id]["matched_by"]


def test_the_vector_arm_cannot_bury_the_exact_lexical_hit(bank, make_entry, ranked):
    entries = [make_entry(f"Entry {i}") for i in range(10)]
    exact = entries[-1]
    ranked(*entries, lexical={exact.pk: 1.0})
    body = run_query(bank, QueryParams("ERR_TOKEN_42", limit=3, fold=False), record=False)
    assert [r["id"] for r in body["results"]][:2] == [entries[0].short_id, exact.short_id]


# --- corrections cannot hide -----------------------------------------------------------------


def test_a_corrected_result_names_its_corrector_outside_the_answer_and_is_never_high(
    bank, make_entry, linked, ranked
):
    stale = make_entry("Playwright login needs HTTP/1.1")
    others = [make_entry(f"Other {i}") for i in range(3)]
    fix = make_entry("Login 403 is a duplicated CSRF meta tag")  # not in the ranking at all
    linked(fix, stale, "corrects", note="The real cause of the 403.")
    ranked(stale, *others, relevance={stale.pk: 0.95})
    body = run_query(bank, QueryParams("playwright login 403", limit=3), record=False)
    item = by_id(body)[stale.short_id]
    assert item["corrected_by"] == fix.short_id
    assert item["confidence"] != "high"
    assert fix.short_id not in {r["id"] for r in body["results"]}


def test_a_retired_corrector_does_not_mark_the_result(bank, make_entry, linked, ranked):
    from graph.curation.lifecycle import retire_entry

    stale = make_entry("Playwright login needs HTTP/1.1")
    fix = make_entry("Login 403 is a duplicated CSRF meta tag")
    linked(fix, stale, "corrects", note="The real cause of the 403.")
    retire_entry(bank, fix.short_id, "wrong too", "It was the proxy.")
    ranked(stale, relevance={stale.pk: 0.95})
    body = run_query(bank, QueryParams("playwright login 403", limit=3), record=False)
    assert by_id(body)[stale.short_id]["corrected_by"] is None


def E(i, source, target, relation, fold_role="", priority=10):
    return PoolEdge(i, source, target, relation, fold_role, priority, "note")


def test_the_corrector_of_a_protected_result_stands_beside_it():
    # 1 (protected) is corrected by 5; 2 (protected) links to 5 as well: 5 must not fold
    # under 2 (a third entry) while 1 stands as a result.
    edges = [
        E(1, 5, 1, "corrects", "dominates", 100),
        E(2, 2, 5, "see_also"),
    ]
    plan = fold_pool([1, 2, 3, 4, 5], edges, limit=4)
    ids = [r.entry_id for r in plan.results]
    assert 5 in ids and 1 in ids
    for r in plan.results:
        assert 5 not in [f.entry_id for f in r.related]


def test_a_lapsed_corrector_of_a_protected_result_folds_into_it():
    lapsed = PoolEdge(1, 5, 1, "corrects", "dominates", 100, "note", source_current=False)
    plan = fold_pool([1, 2, 3, 4, 5], [lapsed], limit=4)
    assert [r.entry_id for r in plan.results] == [1, 2, 3, 4]
    assert [f.entry_id for f in plan.results[0].related] == [5]


def test_the_corrector_of_a_protected_result_leads_the_answer(bank, make_entry, linked, ranked):
    stale = make_entry("Playwright login needs HTTP/1.1")
    second = make_entry("Playwright fixtures")
    filler = [make_entry(f"Filler {i}") for i in range(3)]
    fix = make_entry("Login 403 is a duplicated CSRF meta tag")
    linked(fix, stale, "corrects", note="The real cause of the 403.")
    linked(second, fix, "see_also", note="Same login flow.")
    ranked(stale, second, *filler, fix)
    body = run_query(bank, QueryParams("playwright login 403", limit=4), record=False)
    ids = [r["id"] for r in body["results"]]
    assert fix.short_id in ids and ids.index(fix.short_id) < ids.index(stale.short_id)
    assert by_id(body)[stale.short_id]["corrected_by"] == fix.short_id
    assert all(fix.short_id != p["id"] for r in body["results"] for p in r["related"])


@pytest.mark.parametrize("lapse", ["retired", "expired"])
def test_a_lapsed_corrector_of_a_protected_result_does_not_stand_beside_it(
    bank, make_entry, linked, ranked, lapse
):
    # Only a current corrector must stand (API.md "Corrections"): a retired or expired one is
    # an ordinary member of the protected result's group and folds into it.
    import datetime

    from django.utils import timezone

    from graph.curation.lifecycle import retire_entry

    stale = make_entry("Playwright login needs HTTP/1.1")
    second = make_entry("Playwright fixtures")
    filler = [make_entry(f"Filler {i}") for i in range(3)]
    fix = make_entry("Login 403 is a duplicated CSRF meta tag")
    linked(fix, stale, "corrects", note="The real cause of the 403.")
    if lapse == "retired":
        retire_entry(bank, fix.short_id, "wrong too", "It was the proxy.")
    else:
        yesterday = timezone.localdate() - datetime.timedelta(days=1)
        Entry.objects.filter(pk=fix.pk).update(durable=False, expires_at=yesterday)
    ranked(stale, second, *filler, fix)
    body = run_query(bank, QueryParams("playwright login 403", limit=4), record=False)
    ids = [r["id"] for r in body["results"]]
    assert fix.short_id not in ids
    assert len(ids) == 4
    assert by_id(body)[stale.short_id]["corrected_by"] is None
    assert fix.short_id in [p["id"] for p in by_id(body)[stale.short_id]["related"]]


# --- hop lines -------------------------------------------------------------------------------


def test_noted_edges_past_the_slots_come_as_hop_lines(bank, make_entry, linked, ranked):
    a = make_entry("Rotate the credentials of the billing ledger")
    crowd = [make_entry(f"Crowd entry {i}") for i in range(16)]
    for i, c in enumerate(crowd):
        linked(c, a, "clarifies", note=f"Distinct note number {i} on why this matters here.")
    ranked(a)
    body = run_query(bank, QueryParams("rotate credentials", limit=1, neighbors=3), record=False)
    item = body["results"][0]
    assert len(item["neighbors"]) == 3
    hops = item["hops"]
    assert len(hops) == 12  # the cap
    assert body["stats"]["hops_cut"] == 16 - 3 - 12
    shown = {p["id"] for p in item["neighbors"]} | {h["id"] for h in hops}
    assert len(shown) == 15
    for hop in hops:
        assert set(hop) == {"id", "relation", "direction", "note"}
        assert hop["note"].startswith("Distinct note number")
        assert hop["direction"] == "in" and hop["relation"] == "clarifies"


def test_hop_lines_go_to_the_first_results_only(bank, make_entry, linked, ranked):
    from graph.retrieval.relevance import HOP_RESULTS

    tops = [make_entry(f"Top result {i}") for i in range(HOP_RESULTS + 2)]
    for t, top in enumerate(tops):
        for i in range(6):
            other = make_entry(f"Spoke {t}-{i}")
            linked(other, top, "clarifies", note=f"Distinct note {t}-{i} on why it matters.")
    ranked(*tops)
    params = QueryParams("top result", limit=len(tops), neighbors=3, budget_tokens=50_000)
    body = run_query(bank, params, record=False)
    assert [r["id"] for r in body["results"]] == [t.short_id for t in tops]
    hops = [len(r.get("hops") or ()) for r in body["results"]]
    assert hops == [3] * HOP_RESULTS + [0, 0], hops  # six noted edges: three slots, three hops
    assert all(len(r["neighbors"]) == 3 for r in body["results"])
    assert body["stats"]["hops_cut"] == 0  # nothing past the cap of the results that get hops


def test_the_note_words_rank_the_hop_the_question_needs(bank, make_entry, linked, ranked):
    a = make_entry("Recipe for the payment gateway")
    crowd = [make_entry(f"Crowd entry {i}") for i in range(20)]
    for i, c in enumerate(crowd):
        linked(c, a, "see_also", note=f"Seating plan number {i} of the squad.")
    needed = make_entry("Heron-7 quirk")
    linked(needed, a, "clarifies", note="Needed before you rotate the signing keys.")
    ranked(a)
    body = run_query(bank, QueryParams("how do I rotate signing keys", limit=1), record=False)
    item = body["results"][0]
    assert needed.short_id in {p["id"] for p in item["neighbors"]}


# --- the budget keeps notes longest ---------------------------------------------------------


def _answer(rng: random.Random) -> dict:
    def words(n):
        return " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "omega"]) for _ in range(n))

    def pointer(kind, expanded=False):
        item = {
            "id": f"{rng.getrandbits(32):08x}",
            "relation": "clarifies",
            "direction": "in",
            "kind": kind,
            "note": "Note " + words(rng.randint(5, 40)),
            "summary": words(rng.randint(5, 40)),
            "title": words(rng.randint(3, 12)),
            "status": "live",
        }
        if expanded:
            item["content"] = words(300)
        return item

    results = []
    for rank in range(1, 9):
        results.append(
            {
                "id": f"{rng.getrandbits(32):08x}",
                "title": words(8),
                "summary": words(30),
                "content": words(rng.randint(50, 400)),
                "useful_for": words(20),
                "steps": None,
                "rank": rank,
                "truncated": False,
                "related": [pointer("folded", expanded=rank == 1) for _ in range(2)],
                "neighbors": [pointer("neighbor") for _ in range(3)],
                "links": [],
                "hops": [
                    {
                        "id": "0badc0de",
                        "relation": "see_also",
                        "direction": "out",
                        "note": words(12),
                    }
                    for _ in range(rng.randint(0, 12))
                ],
            }
        )
    return {"query": "q", "results": results, "stats": {"tokens": 99999}}


def test_summaries_go_before_any_note_and_compact_pointers_keep_note_words():
    rng = random.Random(21)
    for case in range(60):
        body = _answer(rng)
        budget = rng.choice([600, 900, 1500, 2500])
        report = fit_budget(body, budget)
        assert estimate_tokens(body) <= budget, case
        results = body["results"]
        pointers = [p for r in results for p in (*r["related"], *r["neighbors"])]
        notes_cut = any(p["note"].endswith(ELLIPSIS) for p in pointers)
        if notes_cut or any(r.get(COMPACT) for r in results):
            assert all(r["summary"] == "" and r["useful_for"] == "" for r in results), case
            assert all(p["summary"] == "" for p in pointers), case
            assert all(r["content"] == "" for r in results), case
        for r in results:
            for short in r.get(COMPACT, ()):
                head, _, note = short.partition(": ")
                assert len(head.split()) == 4 and note.startswith("Note"), short
            for hop in r.get("hops", ()):
                assert hop["note"], case  # a kept hop line keeps (a head of) its note
        assert report["hops_cut"] >= 0


def test_expand_is_honoured_under_a_tight_budget():
    rng = random.Random(5)
    body = _answer(rng)
    expanded = body["results"][0]["related"][0]["id"]
    fit_budget(body, 1800)
    first = body["results"][0]
    kept = [p for p in first["related"] if p["id"] == expanded]
    assert kept and kept[0]["content"], "the expanded pointer keeps its content head"
    assert first.get(COMPACT), "while other pointers were compacted"
