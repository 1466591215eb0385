"""Answers an agent can act on (issue 16 items 1-3): links and corrections between results,
confidence and the no-good-match signal, bounded text, a token budget, compact and expand."""

import pytest

from graph.retrieval import query as query_service
from graph.retrieval.budget import MARKER, estimate_tokens
from graph.retrieval.query import QueryParams, run_query
from kb.services.search import ScoredEntry
from tests.graph.ranking_support import ranked_and_embedded

pytestmark = pytest.mark.django_db


@pytest.fixture
def ranked(monkeypatch, hashing_embedder):
    """Fix the flat ranking; ``relevance`` maps entries to their relevance (default 0.6)."""

    def use(*entries, relevance=None):
        def fake_rank(bank, query, *, limit, **_):
            hits = []
            for i, e in enumerate(entries):
                rel = (relevance or {}).get(e.pk, 0.6)
                hits.append(ScoredEntry(e.pk, 1.0 - i / 100, rel, rel, None, ["vector"], i + 1))
            return hits[:limit]

        monkeypatch.setattr(query_service, "rank_and_embed", ranked_and_embedded(fake_rank))

    return use


def by_id(body):
    return {r["id"]: r for r in body["results"]}


def test_a_correction_between_the_top_two_is_shown_and_ranked_after_its_corrector(
    bank, make_entry, linked, ranked
):
    stale = make_entry("Playwright login needs HTTP/1.1")
    fix = make_entry("Login 403 is a duplicated CSRF meta tag")
    third = make_entry("Unrelated third")
    linked(fix, stale, "corrects", note="Read this first: the real cause of the 403.")
    ranked(stale, fix, third)
    body = run_query(bank, QueryParams("playwright login 403", limit=3))
    assert [r["id"] for r in body["results"]] == [fix.short_id, stale.short_id, third.short_id]
    assert [r["rank"] for r in body["results"]] == [1, 2, 3]
    items = by_id(body)
    assert items[stale.short_id]["corrected_by"] == fix.short_id
    assert items[fix.short_id]["corrected_by"] is None
    assert items[stale.short_id]["links"] == [
        {
            "id": fix.short_id,
            "relation": "corrects",
            "direction": "in",
            "note": "Read this first: the real cause of the 403.",
        }
    ]
    assert items[fix.short_id]["links"][0]["direction"] == "out"
    assert items[third.short_id]["links"] == []
    assert body["stats"]["ranked_after_corrector"] == 1


def test_a_question_about_history_keeps_the_rank_but_still_flags(bank, make_entry, linked, ranked):
    old, new = make_entry("Old retry policy"), make_entry("New retry policy")
    linked(new, old, "supersedes")
    ranked(old, new)
    body = run_query(bank, QueryParams("what was the previous retry policy", limit=2))
    assert [r["id"] for r in body["results"]] == [old.short_id, new.short_id]
    assert body["results"][0]["superseded_by"] == new.short_id
    explicit = run_query(bank, QueryParams("retry policy", limit=2, history=False))
    assert [r["id"] for r in explicit["results"]] == [new.short_id, old.short_id]


def test_links_between_folded_representatives_and_other_results(bank, make_entry, linked, ranked):
    a, b, c = (make_entry(t) for t in "ABC")
    linked(a, b, "see_also", note="Same outage.")
    linked(c, a, "cites")
    ranked(a, b, c)
    body = run_query(bank, QueryParams("q", limit=3))
    items = by_id(body)
    # a and b are both protected, c folds into a: links only between returned results
    assert {(x["id"], x["direction"]) for x in items[a.short_id]["links"]} == {(b.short_id, "out")}
    assert items[b.short_id]["links"][0]["id"] == a.short_id


def test_confidence_bands_and_no_good_match(bank, make_entry, ranked):
    a, b, c = (make_entry(t) for t in "ABC")
    bank.settings = {"relevance_floor": 0.4, "confidence_high": 0.6}
    bank.save()
    ranked(a, b, c, relevance={a.pk: 0.7, b.pk: 0.5, c.pk: 0.2})
    body = run_query(bank, QueryParams("q", limit=3))
    assert [r["confidence"] for r in body["results"]] == ["high", "medium", "low"]
    assert body["no_good_match"] is False
    ranked(a, b, relevance={a.pk: 0.3, b.pk: 0.1})
    body = run_query(bank, QueryParams("q", limit=2))
    assert body["no_good_match"] is True and body["results"][0]["confidence"] == "low"
    assert run_query(bank, QueryParams("q", limit=2, fold=False))["no_good_match"] is True


def test_refills_must_clear_the_floor(bank, make_entry, linked, ranked):
    a, b, c, d = (make_entry(t) for t in "ABCD")
    bank.settings = {"relevance_floor": 0.4}
    bank.save()
    linked(c, a, "clarifies")  # c folds into a: one slot frees for the pool's tail (d)
    ranked(a, b, c, d)
    body = run_query(bank, QueryParams("q", limit=3, pool=4))
    assert list(by_id(body)) == [a.short_id, b.short_id, d.short_id]
    assert body["stats"]["refilled"] == 1
    ranked(a, b, c, d, relevance={d.pk: 0.1})
    body = run_query(bank, QueryParams("q", limit=3, pool=4))
    assert list(by_id(body)) == [a.short_id, b.short_id]
    assert body["stats"]["refills_below_floor"] == 1 and body["stats"]["refilled"] == 0


def test_budget_cuts_content_first_and_never_exceeds(bank, make_entry, linked, ranked):
    # Entries longer than the answer's 20,000-character field cap: the bank allows 30,000.
    bank.settings = {**(bank.settings or {}), "entry_limits": {"content": 30_000}}
    bank.save(update_fields=["settings"])
    big = [make_entry(f"Long {i}", content="word " * 5000) for i in range(4)]
    n = make_entry("Neighbour", summary="One sentence.")
    linked(big[0], n, "see_also", note="Why it matters.")
    ranked(*big)
    body = run_query(bank, QueryParams("q", limit=4))
    assert estimate_tokens(body) <= 1000 == body["stats"]["budget_tokens"]
    assert body["stats"]["tokens"] == estimate_tokens(body)
    assert all(r["truncated"] for r in body["results"]) and len(body["results"]) == 4
    assert body["stats"]["contents_cut"] == 4 and body["stats"]["dropped_pointers"] == 0
    assert any(r["content"].endswith(MARKER) for r in body["results"])
    assert body["results"][0]["neighbors"][0]["id"] == n.short_id  # pointers survive
    for budget in (200, 350, 700, 5000):
        small = run_query(bank, QueryParams("q", limit=4, budget_tokens=budget))
        assert estimate_tokens(small) <= budget
    roomy = run_query(bank, QueryParams("q", limit=4, budget_tokens=100_000))
    assert roomy["results"][0]["content"].endswith(MARKER)  # every field stays bounded


def test_compact_and_expand(bank, make_entry, linked, ranked):
    a, b = make_entry("A", content="Alpha body."), make_entry("B", content="Beta body.")
    folded = make_entry("F", content="Folded body.")
    out = make_entry("N", content="Neighbour body.")
    linked(folded, a, "clarifies")
    linked(a, out, "see_also", note="Next.")
    ranked(a, b, folded)
    plain = run_query(bank, QueryParams("q", limit=2))
    assert "content" not in plain["results"][0]["related"][0]
    assert "content" not in plain["results"][0]["neighbors"][0]
    body = run_query(bank, QueryParams("q", limit=2, expand=[folded.short_id, out.short_id]))
    assert body["results"][0]["related"][0]["content"] == "Folded body."
    assert body["results"][0]["neighbors"][0]["content"] == "Neighbour body."
    compact = run_query(bank, QueryParams("q", limit=2, compact=True))
    assert all(r["content"] == "" and r["truncated"] for r in compact["results"])
    assert compact["stats"]["contents_cut"] == 0  # compact asked for it: the budget cut nothing
    assert estimate_tokens(compact) < estimate_tokens(plain)


def test_query_endpoint_validates_the_new_fields(client_rw, bank, make_entry, ranked):
    ranked(make_entry("A"))
    url = "/api/v1/banks/acme/query"
    assert client_rw.post(url, {"query": "x", "budget_tokens": 5}, format="json").status_code == 400
    assert client_rw.post(url, {"query": "x", "expand": "abc"}, format="json").status_code == 400
    ok = client_rw.post(url, {"query": "x", "compact": True, "expand": []}, format="json")
    assert ok.status_code == 200 and "no_good_match" in ok.json()


def test_batch_read_of_entries(client_rw, bank, other_bank, make_entry, token_client):
    a, b = make_entry("A"), make_entry("B")
    url = "/api/v1/banks/acme/entries"
    body = client_rw.get(url, {"ids": f"{a.short_id},{b.short_id},nope1234,{a.short_id}"}).json()
    assert [e["id"] for e in body["results"]] == [a.short_id, b.short_id]
    assert body["missing"] == ["nope1234"]
    assert client_rw.get(url).status_code == 400
    many = ",".join(f"x{i}" for i in range(101))
    assert client_rw.get(url, {"ids": many}).json()["error"]["code"] == "invalid_ids"
    assert token_client(other_bank).get(url, {"ids": a.short_id}).status_code == 404
