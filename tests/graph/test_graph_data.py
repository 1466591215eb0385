"""Graph data for pictures: the endpoint's shape, filters, limit, tenancy, the cached layout and
its debounced refresh job, and the layout algorithm at a size that needs the scalable path."""

from __future__ import annotations

import datetime as dt
import random

import numpy as np
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from graph.analytics import layout as layout_mod
from graph.analytics.layout import compute_layout
from graph.analytics.layout_store import read_graph, refresh_layout, request_layout, run_requested
from graph.edges.links import link, unlink
from graph.models import GraphLayout

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_graph(bank, make_entry, hashing_embedder):
    """Two clusters joined by one edge, a lone entry, and a note-less backfill edge."""
    a = [make_entry(f"Checkout step {i}", kind="fact") for i in range(4)]
    b = [make_entry(f"Billing rule {i}", kind="gotcha") for i in range(4)]
    lone = make_entry("A lone entry", kind="fact")
    for group in (a, b):
        for x, y in zip(group, group[1:], strict=False):
            link(
                bank,
                {
                    "from": x.short_id,
                    "to": y.short_id,
                    "relation": "see_also",
                    "note": "Same topic from another angle.",
                },
            )
        link(
            bank,
            {
                "from": group[0].short_id,
                "to": group[-1].short_id,
                "relation": "cites",
                "note": "Cited as the origin.",
            },
        )
    bridge = link(
        bank,
        {
            "from": a[0].short_id,
            "to": b[0].short_id,
            "relation": "corrects",
            "note": "Fixes the rounding it assumes.",
        },
    )
    backfill = link(
        bank,
        {
            "from": a[1].short_id,
            "to": b[2].short_id,
            "relation": "cites",
            "source": "citation_backfill",
        },
    )
    return {"a": a, "b": b, "lone": lone, "bridge": bridge, "backfill": backfill}


def test_graph_shape_positions_and_clusters(bank, client_rw, small_graph):
    response = client_rw.get("/api/v1/banks/acme/graph")
    assert response.status_code == 200
    data = response.json()
    assert data["truncated"] is False
    ids = {n["id"] for n in data["nodes"]}
    assert len(ids) == 9 and small_graph["lone"].short_id in ids
    node = next(n for n in data["nodes"] if n["id"] == small_graph["a"][0].short_id)
    assert set(node) >= {"id", "title", "kind", "status", "degree", "community", "x", "y", "z"}
    assert node["kind"] == "fact" and node["status"] == "live"
    assert node["degree"] == 3  # see_also out, cites out, corrects out
    # Each dense group is one cluster; the lone entry is in none.
    by_id = {n["id"]: n for n in data["nodes"]}
    assert len({by_id[e.short_id]["community"] for e in small_graph["a"]}) == 1
    assert len({by_id[e.short_id]["community"] for e in small_graph["b"]}) == 1
    assert by_id[small_graph["lone"].short_id]["community"] is None
    assert (
        by_id[small_graph["a"][0].short_id]["community"]
        != by_id[small_graph["b"][0].short_id]["community"]
    )
    # Positions are distinct: nothing stacked on one point.
    points = {(n["x"], n["y"], n["z"]) for n in data["nodes"]}
    assert len(points) == 9
    # The note-less backfill edge is hidden by default, the noted edges are all there.
    link_ids = {link["id"] for link in data["links"]}
    assert small_graph["backfill"].pk not in link_ids
    assert small_graph["bridge"].pk in link_ids
    bridge = next(x for x in data["links"] if x["id"] == small_graph["bridge"].pk)
    assert bridge == {
        "id": small_graph["bridge"].pk,
        "from": small_graph["a"][0].short_id,
        "to": small_graph["b"][0].short_id,
        "relation": "corrects",
        "has_note": True,
        "source": "author",
    }
    # A small bank with no cache is laid out in the first request, then served from the cache.
    assert data["layout"]["status"] == "computed"
    assert client_rw.get("/api/v1/banks/acme/graph").json()["layout"]["status"] == "ready"


def test_filters_kinds_relations_backfill(client_rw, small_graph):
    with_backfill = client_rw.get("/api/v1/banks/acme/graph?include_backfill=true").json()
    backfill = next(x for x in with_backfill["links"] if x["id"] == small_graph["backfill"].pk)
    assert backfill["has_note"] is False and backfill["source"] == "citation_backfill"

    facts = client_rw.get("/api/v1/banks/acme/graph?kinds=fact").json()
    assert {n["kind"] for n in facts["nodes"]} == {"fact"}
    assert len(facts["nodes"]) == 5
    fact_ids = {n["id"] for n in facts["nodes"]}
    assert all(x["from"] in fact_ids and x["to"] in fact_ids for x in facts["links"])
    assert small_graph["bridge"].pk not in {x["id"] for x in facts["links"]}

    corrects = client_rw.get("/api/v1/banks/acme/graph?relations=corrects,cites").json()
    assert {x["relation"] for x in corrects["links"]} == {"corrects", "cites"}
    assert len(corrects["nodes"]) == 9  # relation filters cut links, not entries


def test_limit_keeps_the_best_connected_and_says_truncated(client_rw, small_graph):
    data = client_rw.get("/api/v1/banks/acme/graph?limit=3").json()
    assert data["truncated"] is True
    assert len(data["nodes"]) == 3
    degrees = sorted((n["degree"] for n in data["nodes"]), reverse=True)
    full = client_rw.get("/api/v1/banks/acme/graph").json()
    assert degrees == sorted((n["degree"] for n in full["nodes"]), reverse=True)[:3]
    kept = {n["id"] for n in data["nodes"]}
    assert all(x["from"] in kept and x["to"] in kept for x in data["links"])


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("limit=0", "limit"),
        ("limit=abc", "limit"),
        ("limit=100001", "limit"),
        ("include_backfill=maybe", "include_backfill"),
        ("include_backfill=", "include_backfill"),
        ("include_backfill=true&include_backfill=false", "include_backfill"),
        ("limit=", "limit"),
        ("limit=5&limit=6", "limit"),
        ("kinds=no_such_kind", "kinds"),
        ("relations=no_such_relation", "relations"),
    ],
)
def test_bad_parameters_are_400(client_rw, small_graph, query, field):
    response = client_rw.get(f"/api/v1/banks/acme/graph?{query}")
    assert response.status_code == 400
    body = response.json()["error"]
    # An unknown filter value is invalid_value (issue 22); a malformed parameter invalid_input.
    expected = "invalid_value" if field in ("kinds", "relations") else "invalid_input"
    assert field in body["fields"] and body["code"] == expected


def test_tenancy_and_scope(bank, other_bank, token_client, small_graph):
    outsider = token_client(other_bank)
    response = outsider.get("/api/v1/banks/acme/graph")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "bank_not_found"
    assert token_client(bank, scopes="read").get("/api/v1/banks/acme/graph").status_code == 200
    assert outsider.get("/api/v1/banks/globex/graph").json()["nodes"] == []


def test_statement_count_does_not_grow_with_the_bank(bank, client_rw, make_entry, small_graph):
    client_rw.get("/api/v1/banks/acme/graph")  # computes and caches the layout
    with CaptureQueriesContext(connection) as small:
        client_rw.get("/api/v1/banks/acme/graph")
    for i in range(15):
        make_entry(f"More {i}", kind="fact")
    refresh_layout(bank)
    with CaptureQueriesContext(connection) as larger:
        assert client_rw.get("/api/v1/banks/acme/graph").json()["layout"]["status"] == "ready"
    assert len(larger) == len(small)


def test_stale_cache_serves_new_entries_beside_a_neighbour(
    bank, settings, make_entry, client_rw, small_graph
):
    settings.KB_LAYOUT_SYNC_MAX = 1  # "large": never laid out inside a request once cached
    refresh_layout(bank)
    newcomer = make_entry("Arrived after the layout", kind="fact")
    link(
        bank,
        {
            "from": newcomer.short_id,
            "to": small_graph["a"][2].short_id,
            "relation": "see_also",
            "note": "Same checkout step.",
        },
    )
    data = client_rw.get("/api/v1/banks/acme/graph").json()
    assert data["layout"]["status"] == "stale"
    by_id = {n["id"]: n for n in data["nodes"]}
    new, anchor = by_id[newcomer.short_id], by_id[small_graph["a"][2].short_id]
    gap = np.linalg.norm(
        np.array([new["x"], new["y"], new["z"]]) - np.array([anchor["x"], anchor["y"], anchor["z"]])
    )
    assert 0 < gap <= layout_mod.SPACING * 1.01


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_edits_schedule_one_debounced_refresh(bank, settings, small_graph):
    """Committed for real: a burst of edits in one transaction is one post-commit event, which
    requests one refresh job (run eagerly here)."""
    from kb.events import bank_changed

    settings.KB_LAYOUT_AUTO_REFRESH = True
    refresh_layout(bank)
    before = GraphLayout.objects.get(bank=bank)
    events = []

    def seen(sender, event, **kwargs):
        events.append(event)

    bank_changed.connect(seen)
    try:
        with transaction.atomic():
            unlink(bank, small_graph["bridge"].pk, reason="wrong")
            link(
                bank,
                {
                    "from": small_graph["lone"].short_id,
                    "to": small_graph["a"][0].short_id,
                    "relation": "see_also",
                    "note": "Background.",
                },
            )
            assert events == []  # nothing before the commit
    finally:
        bank_changed.disconnect(seen)
    assert [e.bank_id for e in events] == [bank.pk]
    after = GraphLayout.objects.get(bank=bank)
    assert after.computed_at > before.computed_at
    assert after.fingerprint == read_graph(bank).fingerprint() != before.fingerprint
    assert after.requested_at is None


def test_request_layout_debounces_and_the_job_is_idempotent(
    bank, small_graph, django_capture_on_commit_callbacks
):
    refresh_layout(bank)
    GraphLayout.objects.filter(bank=bank).update(requested_at=timezone.now())
    assert request_layout(bank.pk) is False  # a job is already scheduled
    GraphLayout.objects.filter(bank=bank).update(
        requested_at=timezone.now() - dt.timedelta(hours=2)
    )
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert request_layout(bank.pk) is True  # that job was lost: schedule again
    assert len(callbacks) == 1
    row = GraphLayout.objects.get(bank=bank)
    requested = row.requested_at.isoformat()
    assert run_requested(bank.pk, requested).startswith("layout of 9 nodes")
    assert run_requested(bank.pk, requested) == "already up to date"
    assert run_requested(10**9) == "bank gone"


def test_layout_scales_by_clusters_and_is_deterministic():
    """5,000 nodes in 250 planted clusters plus 500 lone nodes: the recursive path runs, the
    planted clusters stay together, and a second run gives the same picture."""
    rng = random.Random(7)
    nodes = list(range(5500))
    edges = []
    for c in range(250):
        members = list(range(c * 20, c * 20 + 20))
        for m in members:
            for other in rng.sample(members, 3):
                if other != m:
                    edges.append((m, other))
        edges.append((members[0], rng.randrange(5000)))
    first = compute_layout(nodes, edges)
    assert len(first.xyz) == 5500 and len(first.xy) == 5500
    assert first.community[5200] is None  # lone
    xyz = np.array([first.xyz[n] for n in range(5000)]).reshape(250, 20, 3)
    spread_within = np.linalg.norm(xyz - xyz.mean(axis=1, keepdims=True), axis=2).mean()
    centres = xyz.mean(axis=1)
    spread_between = np.linalg.norm(centres - centres.mean(axis=0), axis=1).mean()
    assert spread_within * 3 < spread_between
    assert compute_layout(nodes, edges).xyz == first.xyz
