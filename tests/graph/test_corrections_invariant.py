"""Corrections cannot hide, as an invariant (issue 21): over random graphs, rankings, limits
and budgets, no result that has a current corrector (a current ``corrects`` edge from a live,
unexpired entry) answers ``confidence: high``, each such result names a current corrector in
``corrected_by``, and when both stand as results the corrector ranks first."""

from __future__ import annotations

import json
import random

import pytest

from graph.curation.lifecycle import retire_entry
from graph.models import Edge
from graph.retrieval import query as query_service
from graph.retrieval.query import QueryParams, run_query
from kb.services.search import ScoredEntry
from tests.graph.ranking_support import ranked_and_embedded

pytestmark = pytest.mark.django_db

LIVE = ("merged", "deleted", "retired", "cancelled")


def current_correctors(bank) -> dict[str, set[str]]:
    """Each corrected entry's current correctors, read apart from the fold's statement."""
    out: dict[str, set[str]] = {}
    edges = Edge.objects.filter(bank=bank, type__name="corrects", invalidated_at__isnull=True)
    for e in edges.select_related("from_entry", "to_entry"):
        if e.from_entry.status not in LIVE and not e.from_entry.is_expired:
            out.setdefault(e.to_entry.short_id, set()).add(e.from_entry.short_id)
    return out


def test_no_corrected_result_answers_high_and_its_corrector_is_always_named(
    bank, make_entry, linked, monkeypatch, hashing_embedder
):
    rng = random.Random(21)
    entries = [make_entry(f"Fact {i} about the ledger replicas") for i in range(16)]
    for _ in range(14):
        a, b = rng.sample(entries, 2)
        linked(a, b, "corrects", note=f"Corrects {b.short_id}.")
    for _ in range(10):
        a, b = rng.sample(entries, 2)
        linked(a, b, rng.choice(["see_also", "clarifies", "part_of"]), note="Related.")
    for retired in rng.sample(entries, 3):
        retire_entry(bank, retired.short_id, "wrong", "It was the proxy.")
    correctors = current_correctors(bank)
    assert correctors  # the graph holds corrections to check

    checked = corrected_seen = 0
    for trial in range(40):
        order = rng.sample(entries, rng.randint(4, 16))
        relevance = {e.pk: rng.uniform(0.3, 0.95) for e in order}

        def fake_rank(bank_, query, *, limit, _order=order, _rel=relevance, **_):
            hits = [
                ScoredEntry(e.pk, 1.0 - i / 100, _rel[e.pk], _rel[e.pk], None, ["vector"], i + 1)
                for i, e in enumerate(_order)
            ]
            return hits[:limit]

        monkeypatch.setattr(query_service, "rank_and_embed", ranked_and_embedded(fake_rank))
        params = QueryParams(
            "ledger replicas",
            limit=rng.randint(1, 8),
            budget_tokens=rng.choice([None, 300, 600, 2000]),
        )
        body = run_query(bank, params, record=False)
        ids = [r["id"] for r in body["results"]]
        for r in body["results"]:
            checked += 1
            mine = correctors.get(r["id"])
            if not mine:
                continue
            corrected_seen += 1
            assert r["confidence"] != "high", (trial, r["id"])
            assert r["corrected_by"] in mine, (trial, r["id"], r["corrected_by"], mine)
            assert r["corrected_by"] in json.dumps(body)
            by = r["corrected_by"]
            cycle = by in ids and r["id"] in correctors.get(by, set())
            if by in ids and not cycle:
                assert ids.index(by) < ids.index(r["id"]), (trial, ids, r["id"], by)
    assert corrected_seen >= 20 and checked > corrected_seen
