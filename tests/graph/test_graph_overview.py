"""Views of a bank too large to draw whole (``GET /api/v1/banks/{bank}/graph/...``): the
community overview, a community drill-down and an answer's neighbourhood, on a generated
clustered bank of 1,500 entries with its communities built by the real service."""

from __future__ import annotations

import pytest

from graph.models import Community, CommunityMembership
from kb.models import Entry
from tests.explorer.large_bank import MARKER, build_large_bank

pytestmark = pytest.mark.django_db

N = 1500


@pytest.fixture
def large(bank, hashing_embedder):
    return build_large_bank(bank.slug, N, hashing_embedder)


def test_overview_has_every_community_with_counts_and_links(client_rw, large):
    data = client_rw.get("/api/v1/banks/acme/graph/communities").json()
    assert data["level"] == "communities" and data["status"] == "ready"
    assert data["entries"] == N
    rows = list(Community.objects.filter(bank=large).order_by("-size", "id"))
    assert [c["id"] for c in data["communities"]] == [c.pk for c in rows]
    assert [c["size"] for c in data["communities"]] == [c.size for c in rows]
    assert data["clustered"] == sum(c.size for c in rows)
    assert data["truncated"] is False and data["total_communities"] == len(rows)
    first = data["communities"][0]
    assert first["label"] and first["central"] and set(first) >= {"x", "y", "z", "x2", "y2"}
    # Distinct positions: the balls were pushed apart.
    assert len({(c["x2"], c["y2"]) for c in data["communities"]}) == len(rows)
    # Links count the current edges between two communities, each pair once.
    assert data["links"] and all(link["weight"] > 0 for link in data["links"])
    assert all(link["from"] < link["to"] for link in data["links"])
    member = dict(
        CommunityMembership.objects.filter(bank=large).values_list("entry_id", "community_id")
    )
    from graph.models import Edge

    across = sum(
        1
        for a, b in Edge.objects.filter(bank=large).values_list("from_entry_id", "to_entry_id")
        if member.get(a) and member.get(b) and member[a] != member[b]
    )
    assert sum(link["weight"] for link in data["links"]) == across


def test_overview_of_a_bank_without_communities_says_so(client_rw, bank):
    data = client_rw.get("/api/v1/banks/acme/graph/communities").json()
    assert data["status"] == "missing" and data["communities"] == []


def test_community_drill_down_is_its_members_laid_out(client_rw, large, settings):
    community = Community.objects.filter(bank=large).order_by("-size").first()
    url = f"/api/v1/banks/acme/graph/communities/{community.pk}"
    data = client_rw.get(url).json()
    members = set(
        CommunityMembership.objects.filter(community=community).values_list(
            "entry__short_id", flat=True
        )
    )
    assert data["level"] == "community" and data["truncated"] is False
    assert {n["id"] for n in data["nodes"]} == members
    assert data["view"]["total"] == community.size == len(members)
    assert data["layout"]["status"] == "computed"
    assert len({(n["x"], n["y"], n["z"]) for n in data["nodes"]}) == len(members)
    ids = {n["id"] for n in data["nodes"]}
    assert data["links"] and all(x["from"] in ids and x["to"] in ids for x in data["links"])
    # A low cap keeps the most central members and says it truncated.
    settings.KB_EXPLORER_DRILL_MAX = 10
    capped = client_rw.get(url).json()
    assert len(capped["nodes"]) == 10 and capped["truncated"] is True
    assert capped["view"] == {**capped["view"], "shown": 10, "total": community.size}


def test_around_is_the_entries_and_their_neighbours(client_rw, large):
    seeds = list(
        Entry.objects.filter(bank=large, title__contains=MARKER).values_list("short_id", flat=True)
    )
    assert len(seeds) >= 3
    data = client_rw.get(f"/api/v1/banks/acme/graph/around?ids={','.join(seeds)}").json()
    ids = {n["id"] for n in data["nodes"]}
    assert set(seeds) <= ids and len(ids) > len(seeds)
    assert data["view"]["seeds"] == seeds and data["view"]["missing"] == []
    # Every other node is a current neighbour of a seed.
    from graph.models import Edge

    pks = dict(Entry.objects.filter(bank=large, short_id__in=ids).values_list("short_id", "pk"))
    seed_pks = {pks[s] for s in seeds}
    for short_id in ids - set(seeds):
        pk = pks[short_id]
        assert Edge.objects.filter(from_entry_id__in=seed_pks, to_entry_id=pk).exists() or (
            Edge.objects.filter(to_entry_id__in=seed_pks, from_entry_id=pk).exists()
        )


@pytest.mark.parametrize(
    "query",
    ["around", "around?ids=", "around?ids=,,", "around?ids=a&ids=b", "communities/1?limit=0"],
)
def test_bad_drill_downs_are_400(client_rw, bank, query):
    response = client_rw.get(f"/api/v1/banks/acme/graph/{query}")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_input"


def test_around_more_than_200_ids_is_400(client_rw, bank):
    ids = ",".join(f"{i:08x}" for i in range(201))
    response = client_rw.get(f"/api/v1/banks/acme/graph/around?ids={ids}")
    assert response.status_code == 400 and response.json()["error"]["fields"] == {
        "ids": "missing or too many"
    }


def test_drill_downs_stay_in_their_bank(client_rw, bank, other_bank, hashing_embedder):
    other = build_large_bank(other_bank.slug, 120, hashing_embedder)
    foreign = Community.objects.filter(bank=other).first()
    response = client_rw.get(f"/api/v1/banks/acme/graph/communities/{foreign.pk}")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "community_not_found"
    ids = ",".join(Entry.objects.filter(bank=other).values_list("short_id", flat=True)[:5])
    response = client_rw.get(f"/api/v1/banks/acme/graph/around?ids={ids}")
    assert response.status_code == 404
    overview = client_rw.get("/api/v1/banks/acme/graph/communities").json()
    assert overview["communities"] == [] and overview["entries"] == 0
