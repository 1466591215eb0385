"""The fold end to end through run_query and the REST endpoint."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from graph.models import QueryLog
from graph.retrieval import query as query_service
from graph.retrieval.query import QueryParams, run_query
from kb.models import Entry
from kb.services.embedding import embed_entries
from kb.services.search import ScoredEntry
from tests.graph.ranking_support import ranked_and_embedded

pytestmark = pytest.mark.django_db


@pytest.fixture
def ranked(monkeypatch, hashing_embedder):
    """Fix the flat ranking (tested in kb) so each fold rule can be checked exactly (the query
    vector the fold ranks neighbours by comes from the test-only hashing embedder)."""

    def use(*entries):
        def fake_rank(bank, query, *, limit, **_):
            hits = [
                ScoredEntry(e.pk, 1.0 - i / 100, 1.0, 1.0, None, ["vector"], i + 1)
                for i, e in enumerate(entries)
            ]
            return hits[:limit]

        monkeypatch.setattr(query_service, "rank_and_embed", ranked_and_embedded(fake_rank))

    return use


def ids(body, key="results"):
    return [r["id"] for r in body[key]]


def test_fold_response_shape_and_pointer(bank, make_entry, linked, ranked):
    a, b, c, d = (make_entry(t, summary=f"{t} in one sentence.") for t in ("A", "B", "C", "D"))
    linked(d, c, "corrects", note="Read before trusting its retry count.")
    ranked(a, b, c, d)
    body = run_query(bank, QueryParams("q", limit=3))
    assert ids(body) == [a.short_id, b.short_id, d.short_id]
    assert body["fold"] is True
    pointer = body["results"][2]["related"][0]
    assert pointer == {
        "id": c.short_id,
        "relation": "corrects",
        "direction": "out",
        "kind": "folded",
        "note": "Read before trusting its retry count.",
        "summary": "C in one sentence.",
        "title": "C",
        "status": "live",
        "via": None,
    }
    assert body["stats"] == {**body["stats"], "pool": 4, "groups": 3, "folded": 1, "refilled": 0}


def test_neighbors_order_cap_and_outside_pool(bank, make_entry, linked, ranked):
    a, b = make_entry("A"), make_entry("B")
    n_plain, n_noted, n_corrects, n_conflict = (
        make_entry(t) for t in ("plain", "noted", "corrects", "conflict")
    )
    linked(a, n_plain, "see_also")
    linked(a, n_noted, "see_also", note="Background for the outage.")
    linked(n_corrects, a, "corrects")
    linked(a, n_conflict, "conflicts_with")
    linked(a, b, "cites")  # b is in the pool: never a neighbour
    ranked(a, b)
    body = run_query(bank, QueryParams("q", limit=2, neighbors=3))
    neighbors = body["results"][0]["neighbors"]
    # the noted edge first; then priority (corrects = conflicts_with = 100 > see_also), ties by edge age
    assert [n["id"] for n in neighbors] == [
        n_noted.short_id,
        n_corrects.short_id,
        n_conflict.short_id,
    ]
    assert neighbors[0]["note"] and all(n["kind"] == "neighbor" for n in neighbors)
    assert {n["direction"] for n in neighbors if n["id"] == n_corrects.short_id} == {"in"}
    assert b.short_id not in [n["id"] for n in neighbors]
    assert body["stats"]["neighbors"] == 3
    assert (
        run_query(bank, QueryParams("q", limit=2, neighbors=1))["results"][0]["neighbors"][0]["id"]
        == n_noted.short_id
    )


def test_superseded_result_carries_its_replacement_first(bank, make_entry, linked, ranked):
    old, other = make_entry("Old decision"), make_entry("Other")
    noted = make_entry("Noted")
    new = make_entry("New decision")
    linked(old, noted, "see_also", note="A noted neighbour that would otherwise come first.")
    linked(new, old, "supersedes")
    ranked(old, other)
    first = run_query(bank, QueryParams("q", limit=2, neighbors=1))["results"][0]["neighbors"]
    assert (
        first[0]["id"] == new.short_id
        and first[0]["relation"] == "supersedes"
        and first[0]["direction"] == "in"
    )
    # ... even when the replacement is in the pool but not among the results
    ranked(old, other, make_entry("X"), new)
    body = run_query(bank, QueryParams("q", limit=2, neighbors=1, pool=4))
    assert body["results"][0]["neighbors"][0]["id"] == new.short_id


def test_usage_bumped_only_for_results(bank, make_entry, linked, ranked):
    a, b, c, n = (make_entry(t) for t in "ABCN")
    linked(c, b, "see_also")
    linked(a, n, "see_also")
    ranked(a, b, c)
    run_query(bank, QueryParams("q", limit=2))
    usage = dict(Entry.objects.filter(bank=bank).values_list("title", "usage_count"))
    assert usage == {"A": 1, "B": 1, "C": 0, "N": 0}


def test_fold_false_is_flat_with_same_shape(bank, make_entry, linked, ranked):
    a, b, c = (make_entry(t) for t in "ABC")
    linked(c, b, "corrects")
    ranked(a, b, c)
    body = run_query(bank, QueryParams("q", limit=3, fold=False))
    assert ids(body) == [a.short_id, b.short_id, c.short_id] and body["fold"] is False
    assert all(r["related"] == [] and r["neighbors"] == [] for r in body["results"])


def test_playbook_steps_come_back_whole(bank, make_entry, linked, ranked):
    a, b = make_entry("A"), make_entry("B")
    book = make_entry(
        "Recover a batch", kind="playbook", steps=["find it", "replay it", "reconcile"]
    )
    linked(a, book, "part_of")
    ranked(a, b)
    neighbor = run_query(bank, QueryParams("q", limit=2))["results"][0]["neighbors"][0]
    assert neighbor["steps"] == ["find it", "replay it", "reconcile"]
    ranked(book, a)
    assert run_query(bank, QueryParams("q", limit=2))["results"][0]["steps"] == [
        "find it",
        "replay it",
        "reconcile",
    ]


def test_every_query_is_logged(bank, make_entry, linked, ranked):
    a, b, c, n = (make_entry(t) for t in "ABCN")
    linked(c, a, "clarifies")
    linked(b, n, "see_also")
    ranked(a, b, c)
    run_query(bank, QueryParams("q", limit=2), actor="agent:x")
    log = QueryLog.objects.get()
    assert log.actor == "agent:x" and log.result_ids == [a.short_id, b.short_id]
    assert (
        log.pointer_ids == [c.short_id]
        and log.neighbor_ids == [n.short_id]
        and log.params["limit"] == 2
    )


def test_fold_adds_at_most_two_queries(bank, make_entry, linked, hashing_embedder):
    entries = [
        make_entry(f"deploy step {i} rollout", content=f"deploy rollout canary {i}")
        for i in range(30)
    ]
    for x, y in zip(entries, entries[1:], strict=False):
        linked(x, y, "see_also", note="Next part of the same rollout.")
    outside = [make_entry(f"unrelated {i}") for i in range(10)]
    for i, o in enumerate(outside):
        linked(entries[i], o, "cites")
    embed_entries(Entry.objects.filter(bank=bank), embedder=hashing_embedder)

    def count(fold, **kw):
        with CaptureQueriesContext(connection) as ctx:
            run_query(bank, QueryParams("deploy rollout canary", fold=fold, **kw))
        return len(ctx.captured_queries)

    flat = count(False)
    for kw in (
        {},
        {"pool": 40, "limit": 20, "neighbors": 10},
        {"pool": 5, "limit": 2, "neighbors": 0},
    ):
        assert count(True, **kw) - flat <= 2, kw


def test_query_endpoint_with_fold(client_rw, bank, make_entry, linked, ranked):
    a, b, c = (make_entry(t) for t in "ABC")
    linked(c, b, "clarifies", note="Makes its second step precise.")
    ranked(a, b, c)
    body = client_rw.post(
        "/api/v1/banks/acme/query", {"query": "anything", "limit": 2}, format="json"
    ).json()
    assert body["fold"] is True and ids(body) == [a.short_id, b.short_id]
    assert body["results"][1]["related"][0]["id"] == c.short_id
