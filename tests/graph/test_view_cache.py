"""Cached layouts of the explorer's views of a large bank (``graph.analytics.view_cache``): a
community's drill-down is laid out once and read back until its nodes or edges change; the
community overview's edge counts are kept until an edit of the bank drops them after commit;
the layout job's warm-up lays out the overview and the largest communities ahead of a visit."""

from __future__ import annotations

import pytest

from graph.analytics import overview as overview_module
from graph.analytics.view_cache import warm_views
from graph.edges.links import link
from graph.models import Community, CommunityMembership, Edge, ViewLayout
from tests.explorer.large_bank import build_large_bank

pytestmark = pytest.mark.django_db

N = 1200


@pytest.fixture
def large(bank, hashing_embedder):
    return build_large_bank(bank.slug, N, hashing_embedder)


def _members(community: Community, n: int) -> list[str]:
    return list(
        CommunityMembership.objects.filter(community=community)
        .order_by("-centrality", "entry_id")
        .values_list("entry__short_id", flat=True)[:n]
    )


def _unlinked_pair(community: Community) -> tuple[str, str]:
    """Two members of ``community`` with no edge between them."""
    members = _members(community, community.size)
    rows = Edge.objects.filter(bank=community.bank).values_list(
        "from_entry__short_id", "to_entry__short_id"
    )
    linked = {frozenset(r) for r in rows}
    return next(
        (x, y)
        for x in members
        for y in reversed(members)
        if x != y and frozenset((x, y)) not in linked
    )


def _positions(data: dict) -> dict:
    return {n["id"]: (n["x"], n["y"], n["z"], n["x2"], n["y2"]) for n in data["nodes"]}


def test_community_layout_is_read_back_until_its_graph_changes(client_rw, large):
    communities = list(Community.objects.filter(bank=large).order_by("-size", "id"))
    biggest, other = communities[0], communities[1]
    url = f"/api/v1/banks/acme/graph/communities/{biggest.pk}"
    first = client_rw.get(url).json()
    assert first["layout"]["status"] == "computed"
    assert ViewLayout.objects.filter(bank=large, community=biggest).count() == 1
    again = client_rw.get(url).json()
    assert again["layout"]["status"] == "ready"
    assert _positions(again) == _positions(first)
    assert again["nodes"] == first["nodes"] and again["links"] == first["links"]

    # An edge elsewhere (inside another community) leaves this picture as it was.
    a, b = _unlinked_pair(other)
    link(large, {"from": a, "to": b, "relation": "see_also"}, reason="test")
    assert client_rw.get(url).json()["layout"]["status"] == "ready"

    # A new edge among the drawn members changes the fingerprint: laid out again, and drawn.
    pair = _unlinked_pair(biggest)
    link(large, {"from": pair[0], "to": pair[1], "relation": "see_also"}, reason="test")
    fresh = client_rw.get(url).json()
    assert fresh["layout"]["status"] == "computed"
    assert any((x["from"], x["to"]) == pair for x in fresh["links"])
    assert client_rw.get(url).json()["layout"]["status"] == "ready"


def test_overview_counts_are_kept_until_an_edit_drops_them(
    client_rw, large, monkeypatch, django_capture_on_commit_callbacks
):
    url = "/api/v1/banks/acme/graph/communities"
    first = client_rw.get(url).json()
    assert ViewLayout.objects.filter(bank=large, key="overview").exists()

    def refuse(*args):
        raise AssertionError("the edge counts were computed again")

    real = overview_module._community_pairs
    monkeypatch.setattr(overview_module, "_community_pairs", refuse)
    assert client_rw.get(url).json() == first  # read back: no aggregate over the edges

    # An edge across two communities: after commit the overview is dropped and recounted.
    communities = [c["id"] for c in first["communities"]]
    a = _members(Community.objects.get(pk=communities[0]), 1)[0]
    b = _members(Community.objects.get(pk=communities[-1]), 1)[0]
    with django_capture_on_commit_callbacks(execute=True):
        link(large, {"from": a, "to": b, "relation": "see_also"}, reason="test")
    assert not ViewLayout.objects.filter(bank=large, key="overview").exists()
    monkeypatch.setattr(overview_module, "_community_pairs", real)
    after = client_rw.get(url).json()
    weights = {(x["from"], x["to"]): x["weight"] for x in first["links"]}
    low, high = sorted((communities[0], communities[-1]))
    now = {(x["from"], x["to"]): x["weight"] for x in after["links"]}
    assert now[(low, high)] == weights.get((low, high), 0) + 1


def test_warm_up_lays_out_the_overview_and_largest_communities(
    client_rw, large, settings, hashing_embedder
):
    settings.KB_EXPLORER_OVERVIEW_MIN = 5000
    assert warm_views(large) == 0  # drawn whole: nothing to warm
    assert not ViewLayout.objects.filter(bank=large).exists()
    settings.KB_EXPLORER_OVERVIEW_MIN = 500
    assert warm_views(large, top=2) == 2
    assert warm_views(large, top=2) == 0  # already laid out
    biggest = Community.objects.filter(bank=large).order_by("-size", "id").first()
    data = client_rw.get(f"/api/v1/banks/acme/graph/communities/{biggest.pk}").json()
    assert data["layout"]["status"] == "ready"
    # Rebuilding the communities drops their cached views with them.
    from graph.analytics.communities import build_communities

    build_communities(large, embedder=hashing_embedder)
    assert not ViewLayout.objects.filter(bank=large, community__isnull=False).exists()
