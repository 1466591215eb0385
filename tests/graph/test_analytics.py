"""Graph analytics on small hand-built graphs: PPR, communities, statistics, fact search, split."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import RequestFactory
from django.utils import timezone

from graph.actions.curation import SplitEntry
from graph.analytics.communities import build_communities, community_of
from graph.analytics.stats import graph_stats, nearest_rank
from graph.api.analytics_views import stats_page
from graph.curation.merge import merge_entries
from graph.curation.revert import revert_operation
from graph.curation.split import split_entry
from graph.edges.links import unlink
from graph.edges.vocab import edge_types_for_bank
from graph.models import Alias, Community, CommunityMembership, Edge, EdgeEmbedding
from graph.retrieval.facts import embed_edge_notes, search_facts
from graph.retrieval.ppr import k_hop_subgraph, ppr
from kb.actions.base import Caller
from kb.errors import InvalidInput, NotFound
from kb.models import Entry, EntryKind, EntryStatus

pytestmark = pytest.mark.django_db


def bulk_graph(bank, titles: list[str], pairs: list[tuple[int, int]], relation="see_also"):
    """Many entries and edges at once (test setup only: no operation, no history)."""
    kind = EntryKind.objects.get(bank=None, name="fact")
    entries = Entry.objects.bulk_create(
        [
            Entry(bank=bank, title=t, kind=kind, short_id=f"{i:08x}")
            for i, t in enumerate(titles, start=0x10000000)
        ]
    )
    etype = edge_types_for_bank(bank)[relation]
    Edge.objects.bulk_create(
        [Edge(bank=bank, from_entry=entries[a], to_entry=entries[b], type=etype) for a, b in pairs]
    )
    return entries


# --- Personalized PageRank ------------------------------------------------------------------


def test_ppr_ranks_a_seeds_strong_neighbour_above_a_far_node(
    bank, make_entry, linked, hashing_embedder
):
    seed = make_entry("Zanzibar settlement connector")
    near = make_entry("Ledger export")
    x1, x2, far = make_entry("Hop one"), make_entry("Hop two"), make_entry("Far away")
    linked(seed, near, "supersedes")  # weight 3
    linked(near, seed, "see_also")
    linked(seed, x1)
    linked(x1, x2)
    linked(x2, far)
    result = ppr(bank, "zanzibar", seeds=1, hops=3)
    ranked = [h.entry.pk for h in result.hits]
    assert ranked[0] == seed.pk and result.hits[0].seed
    assert [e.pk for e, _ in result.seeds] == [seed.pk]
    assert ranked.index(near.pk) < ranked.index(x1.pk) < ranked.index(far.pk)
    assert len(result.subgraph.nodes) == 5 and not result.subgraph.truncated
    assert abs(sum(h.score for h in result.hits) - 1.0) < 1e-6  # every node is in the top 20
    # Two hops do not reach the far node.
    short = ppr(bank, "zanzibar", seeds=1, hops=2)
    assert far.pk not in {h.entry.pk for h in short.hits}


def test_ppr_hub_budget_is_respected(bank, django_assert_max_num_queries):
    titles = ["Seed", "Hub"] + [f"Leaf {i}" for i in range(300)]
    pairs = [(0, 1)] + [(1, i) for i in range(2, 302)]
    entries = bulk_graph(bank, titles, pairs)
    with django_assert_max_num_queries(3):  # one statement per hop, one closing statement
        sub = k_hop_subgraph(bank, [entries[0].pk], hops=2, max_nodes=1000, per_node=50)
    # The hub contributes at most 50 edges per direction: 50 leaves (out) and the seed (in).
    assert len(sub.nodes) == 2 + 50
    assert sub.truncated and sub.limits_hit == ["per_node"]
    capped = k_hop_subgraph(bank, [entries[0].pk], hops=2, max_nodes=20, per_node=500)
    assert len(capped.nodes) == 20 and "max_nodes" in capped.limits_hit
    result = ppr(bank, "", seed_entries=[entries[0]], hops=2, max_nodes=40, limit=5)
    assert result.subgraph.truncated and len(result.subgraph.nodes) <= 40
    assert {h.entry.title for h in result.hits[:2]} == {"Seed", "Hub"}
    assert [h.entry.title for h in result.hits if h.seed] == ["Seed"]


def test_ppr_endpoint(bank, make_entry, linked, client_rw, hashing_embedder):
    seed, other = make_entry("Zanzibar gateway"), make_entry("Retry queue")
    linked(seed, other, "requires")
    response = client_rw.post(
        "/api/v1/banks/acme/search/ppr", {"query": "zanzibar", "limit": 5}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["results"][0] == {
        "id": seed.short_id,
        "title": "Zanzibar gateway",
        "kind": "fact",
        "score": body["results"][0]["score"],
        "seed": True,
    }
    assert body["results"][1]["id"] == other.short_id and not body["results"][1]["seed"]
    assert body["seeds"][0]["id"] == seed.short_id
    assert body["subgraph"]["nodes"] == 2 and body["subgraph"]["edges"] == 1
    for bad in ({"query": "x", "limit": 0}, {"query": " "}, {"query": "x", "hops": 9}, {"q": "x"}):
        response = client_rw.post("/api/v1/banks/acme/search/ppr", bad, format="json")
        assert response.status_code == 400, bad
        assert response.json()["error"]["code"] == "invalid_input"


# --- communities ------------------------------------------------------------------------------


@pytest.fixture
def two_clusters(bank, make_entry, linked):
    billing = [
        make_entry(f"Invoice {t}", summary="Billing of customer invoices.")
        for t in ("drafts", "taxes", "reminders", "credit notes", "numbering")
    ]
    deploys = [
        make_entry(f"Kubernetes {t}", summary="Deploying services to the cluster.")
        for t in ("rollouts", "secrets", "ingress", "autoscaling", "node pools")
    ]
    for group in (billing, deploys):
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                linked(a, b)
    linked(billing[0], deploys[0], "cites")  # one bridge between the clusters
    loner = make_entry("Unconnected note")
    return billing, deploys, loner


def test_communities_found_on_two_obvious_clusters(bank, two_clusters, hashing_embedder):
    billing, deploys, loner = two_clusters
    built = build_communities(bank)
    assert (built.communities, built.members) == (2, 10)
    groups = {
        frozenset(
            CommunityMembership.objects.filter(community=c).values_list("entry_id", flat=True)
        )
        for c in Community.objects.filter(bank=bank)
    }
    assert groups == {frozenset(e.pk for e in billing), frozenset(e.pk for e in deploys)}
    invoice = Community.objects.get(bank=bank, memberships__entry=billing[1])
    assert "invoice" in invoice.terms and invoice.size == 5
    # Equally central inside the clique; the bridge end is more connected overall.
    assert invoice.central_entry_ids[0] == billing[0].pk
    assert "Invoice drafts" in invoice.summary and invoice.embedding is not None
    # Rebuilding replaces the set: same communities, new rows, no leftovers.
    first_ids = set(Community.objects.filter(bank=bank).values_list("pk", flat=True))
    build_communities(bank)
    assert Community.objects.filter(bank=bank).count() == 2
    assert not first_ids & set(Community.objects.filter(bank=bank).values_list("pk", flat=True))
    assert CommunityMembership.objects.filter(bank=bank).count() == 10
    with pytest.raises(NotFound) as exc:
        community_of(bank, loner.short_id)
    assert exc.value.code == "no_community"


def test_community_endpoints(bank, two_clusters, client_rw, hashing_embedder):
    billing, deploys, loner = two_clusters
    call_command("build_communities", "acme", stdout=io.StringIO(), stderr=io.StringIO())
    listed = client_rw.get("/api/v1/banks/acme/communities").json()["communities"]
    assert [c["size"] for c in listed] == [5, 5]
    found = client_rw.get("/api/v1/banks/acme/communities", {"q": "kubernetes cluster"}).json()
    top = found["communities"][0]
    assert top["central"][0]["id"] == deploys[0].short_id and "score" in top
    assert "kubernetes" in top["terms"]
    mine = client_rw.get(f"/api/v1/banks/acme/entries/{deploys[2].short_id}/community").json()
    assert mine["community"]["id"] == top["id"] and 0 < mine["centrality"] <= 1
    assert mine["entry"] == {"id": deploys[2].short_id, "title": deploys[2].title}
    none = client_rw.get(f"/api/v1/banks/acme/entries/{loner.short_id}/community")
    assert none.status_code == 404 and none.json()["error"]["code"] == "no_community"
    missing = client_rw.get("/api/v1/banks/acme/entries/ffffffff/community")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "entry_not_found"
    bad = client_rw.get("/api/v1/banks/acme/communities", {"limit": "lots"})
    assert bad.status_code == 400


def test_communities_stay_in_their_bank(
    bank, other_bank, two_clusters, token_client, hashing_embedder
):
    build_communities(bank)
    outsider = token_client(other_bank)
    assert outsider.get("/api/v1/banks/acme/communities").status_code == 404
    assert outsider.get("/api/v1/banks/globex/communities").json() == {"communities": []}


def test_tasks_rebuild_communities_and_embed_notes(bank, two_clusters, linked, hashing_embedder):
    from graph.analytics.tasks import (
        build_all_communities_task,
        build_communities_task,
        embed_edge_notes_task,
    )

    billing, deploys, loner = two_clusters
    built = build_communities_task.delay(bank.pk).get()
    assert built == {"bank": bank.pk, "communities": 2, "members": 10}
    assert build_communities_task.delay(987654).get()["error"] == "bank_not_found"
    assert build_all_communities_task.delay().get() == 1
    assert Community.objects.filter(bank=bank).count() == 2  # replaced, not added to
    linked(loner, billing[0], "see_also", note="Explains an invoice numbering quirk.")
    assert embed_edge_notes_task.delay(bank.pk).get() == {"bank": bank.pk, "embedded": 1}
    assert embed_edge_notes_task.delay(bank.pk).get() == {"bank": bank.pk, "embedded": 0}


# --- statistics -------------------------------------------------------------------------------


@pytest.fixture
def small_graph(bank, make_entry, linked):
    a, b, c = make_entry("Alpha"), make_entry("Beta"), make_entry("Gamma", kind="decision")
    d, e = make_entry("Delta", kind="gotcha"), make_entry("Epsilon")
    gone = make_entry("Duplicate of alpha")
    linked(a, b, "cites", note="Beta explains the retry budget Alpha relies on.")
    linked(a, c, "see_also")
    linked(b, c, "see_also")
    linked(c, d, "corrects", note="Delta is the trap Gamma falls into.")
    old = linked(a, d, "see_also")
    unlink(bank, old.pk, "wrong")  # closed: not current
    past = timezone.now() - dt.timedelta(days=3)
    linked(
        b,
        d,
        "see_also",
        valid_to=past.isoformat(),
        valid_from=(past - dt.timedelta(days=9)).isoformat(),
    )
    linked(gone, e)
    merge_entries(bank, a.short_id, gone.short_id, "duplicate")  # gone → a; its edge moves to a
    e.status = EntryStatus.RETIRED
    e.save()
    return a, b, c, d, e


def test_stats_numbers_are_exact(bank, small_graph):
    a, b, c, d, e = small_graph
    stats = graph_stats(bank, reach_from=a.short_id).as_json()
    assert stats["entries"] == {
        "total": 5,
        "by_kind": {"decision": 1, "fact": 3, "gotcha": 1},
        "by_status": {"live": 4, "merged": 1, "retired": 1},
    }
    # Current: a→b cites, a→c, b→c see_also, c→d corrects, a→e see_also (moved by the merge).
    assert stats["edges"] == {
        "total": 5,
        "by_relation": {"see_also": 3, "cites": 1, "corrects": 1},
        "by_source": {"author": 5},  # the merge keeps the moved edge's source
        "with_note": 2,
        "with_note_share": 0.4,
    }
    # Degrees: a 3, b 2, c 3, d 1, e 1 → sorted 1 1 2 3 3.
    assert stats["degree"] == {"median": 2, "p99": 3, "max": 3, "mean": 2.0, "isolated": 0}
    assert [(h["id"], h["degree"]) for h in stats["hubs"]] == [
        (a.short_id, 3),
        (c.short_id, 3),
        (b.short_id, 2),
        (d.short_id, 1),
        (e.short_id, 1),
    ]
    assert stats["relations"] == [
        {"relation": "see_also", "count": 3, "with_note": 0, "share": 0.6},
        {"relation": "cites", "count": 1, "with_note": 1, "share": 0.2},
        {"relation": "corrects", "count": 1, "with_note": 1, "share": 0.2},
    ]
    # From a: depth 1 reaches a, b, c, e; depth 2 adds d; the start counts itself.
    assert [(r["depth"], r["reached"], r["share"]) for r in stats["reach"]["depths"]] == [
        (1, 4, 0.8),
        (2, 5, 1.0),
        (3, 5, 1.0),
        (4, 5, 1.0),
    ]


def test_nearest_rank_percentile():
    values = list(range(1, 201))
    assert nearest_rank(values, 0.99) == 198 and nearest_rank(values, 0.5) == 100
    assert nearest_rank([], 0.99) == 0 and nearest_rank([7], 0.99) == 7


def test_stats_endpoint_and_staff_page(bank, small_graph, client_rw):
    a = small_graph[0]
    body = client_rw.get("/api/v1/banks/acme/stats", {"from": a.short_id}).json()
    assert body["edges"]["total"] == 5 and body["reach"]["from"]["id"] == a.short_id
    assert client_rw.get("/api/v1/banks/acme/stats").json()["reach"] is None
    unknown = client_rw.get("/api/v1/banks/acme/stats", {"from": "nope"})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "entry_not_found"

    staff = User.objects.create_user("curator", password="x", is_staff=True)
    request = RequestFactory().get("/admin/graph/stats/acme/", {"from": a.short_id})
    request.user = staff
    page = stats_page(request, bank="acme")
    html = page.content.decode()
    assert page.status_code == 200
    assert (
        html.count('<svg role="img"') == 5
        and "Relation breakdown" in html
        and "cdn" not in html.lower()
    )
    assert "see_also" in html and "depth 2" in html
    request = RequestFactory().get("/admin/graph/stats/acme/")
    request.user = User.objects.create_user("visitor", password="x")
    assert stats_page(request, bank="acme").status_code == 302  # to the admin login


# --- fact search ------------------------------------------------------------------------------


@pytest.mark.model
def test_fact_search_finds_an_edge_by_what_its_note_says(bank, make_entry, linked, client_rw):
    billing, ledger = make_entry("Billing service"), make_entry("Ledger database")
    refunds, mail = make_entry("Refund worker"), make_entry("Email gateway")
    closing = linked(
        billing, ledger, "requires", note="Month-end closing waits until the ledger export is done."
    )
    retry = linked(
        refunds, billing, "requires", note="Failed card refunds are retried every hour through it."
    )
    linked(mail, billing, "see_also", note="Sends the customer their invoice PDF.")
    linked(mail, ledger, "see_also")  # no note: no fact vector
    assert embed_edge_notes(bank) == 3
    assert embed_edge_notes(bank) == 0  # idempotent: the texts did not change
    assert EdgeEmbedding.objects.filter(bank=bank).count() == 3

    hits, _ = search_facts(bank, "how often are declined card payments given back again", limit=3)
    assert hits[0].edge.pk == retry.pk and hits[0].vector_score is not None
    hits, _ = search_facts(bank, "what does the accounting period close depend on", limit=3)
    assert hits[0].edge.pk == closing.pk

    response = client_rw.post(
        "/api/v1/banks/acme/search/facts",
        {"query": "customer gets the invoice by email", "limit": 2},
        format="json",
    )
    assert response.status_code == 200, response.content
    top = response.json()["results"][0]
    assert top["from"]["id"] == mail.short_id and top["to"]["title"] == "Billing service"
    assert set(top["edge"]) >= {"id", "from", "to", "relation", "note", "valid_from", "valid_to"}

    unlink(bank, retry.pk, "the worker was retired")
    hits, _ = search_facts(bank, "how often are declined card payments given back again", limit=3)
    assert retry.pk not in {h.edge.pk for h in hits}  # current edges only


def test_fact_search_respects_valid_time_and_words_without_vectors(
    bank, make_entry, linked, hashing_embedder, client_rw
):
    a, b = make_entry("Payroll"), make_entry("Bank feed")
    start = timezone.now() - dt.timedelta(days=30)
    end = timezone.now() - dt.timedelta(days=10)
    old = linked(
        a,
        b,
        "requires",
        note="Salaries were paid from the quarterly escrow account.",
        valid_from=start.isoformat(),
        valid_to=end.isoformat(),
    )
    hits, _ = search_facts(bank, "escrow account")  # no vectors yet: the lexical arm finds it
    assert hits == []  # not valid now
    hits, _ = search_facts(bank, "escrow account", valid_at=end - dt.timedelta(days=1))
    assert [h.edge.pk for h in hits] == [old.pk] and hits[0].lexical_score == 1.0
    response = client_rw.post(
        "/api/v1/banks/acme/search/facts",
        {"query": "escrow", "valid_at": (end - dt.timedelta(days=1)).date().isoformat()},
        format="json",
    )
    assert [r["edge"]["id"] for r in response.json()["results"]] == [old.pk]
    bad = client_rw.post(
        "/api/v1/banks/acme/search/facts", {"query": "x", "valid_at": "soon"}, format="json"
    )
    assert bad.status_code == 400


# --- split --------------------------------------------------------------------------------------


def snapshot(bank):
    entries = sorted(
        Entry.objects.filter(bank=bank).values_list("pk", "short_id", "title", "status", "key")
    )
    edges = sorted(
        Edge.objects.filter(bank=bank).values_list(
            "pk", "from_entry_id", "to_entry_id", "type_id", "note", "invalidated_at", "evidence"
        )
    )
    aliases = sorted(Alias.objects.filter(bank=bank).values_list("pk", "entry_id", "normalized"))
    return entries, edges, aliases


@pytest.fixture
def broad_entry(bank, make_entry, linked):
    original = make_entry("Payments: retries and refunds")
    x, y, z = make_entry("Checkout"), make_entry("Ledger"), make_entry("Card network")
    cited = linked(x, original, "cites", note="Checkout follows these retry rules.")
    stays = linked(original, y, "see_also")
    corrects = linked(original, z, "corrects", note="The network's refund window is 30 days.")
    return original, cited, stays, corrects


def test_split_creates_parts_moves_chosen_edges_and_reverts_exactly(bank, broad_entry):
    original, cited, stays, corrects = broad_entry
    before = snapshot(bank)
    result = split_entry(
        bank,
        original.short_id,
        [
            {"title": "Payment retries", "content": "How retries work.", "kind": "recipe"},
            {"title": "Refunds", "content": "How refunds work.", "key": "topic:refunds"},
        ],
        edges={cited.pk: 0, corrects.pk: 1, stays.pk: "keep"},
        reason="Two topics in one entry.",
    )
    retries, refunds = result.parts
    assert result.operation.kind == "split" and refunds.key == "topic:refunds"
    current = {
        (e.from_entry_id, e.to_entry_id, e.type.name)
        for e in Edge.objects.filter(bank=bank, invalidated_at__isnull=True)
    }
    assert current == {
        (retries.pk, original.pk, "split_from"),
        (refunds.pk, original.pk, "split_from"),
        (cited.from_entry_id, retries.pk, "cites"),
        (original.pk, stays.to_entry_id, "see_also"),
        (refunds.pk, corrects.to_entry_id, "corrects"),
    }
    moved = Edge.objects.get(pk=result.moved[cited.pk])
    assert moved.note == cited.note and moved.replaces_id == cited.pk
    revert_operation(bank, result.operation.pk, "split was a mistake")
    assert snapshot(bank) == before


def test_split_validates_parts_and_edge_assignments(bank, broad_entry, make_entry, linked):
    original, cited, stays, corrects = broad_entry
    elsewhere = linked(make_entry("P"), make_entry("Q"))
    cases = [
        ([{"title": "ok"}, {"content": "no title"}], None, "parts[1].title"),
        ([], None, "parts"),
        ([{"title": "ok", "connections": []}], None, "parts[0].connections"),
        ([{"title": "ok"}], {str(elsewhere.pk): 0}, f"edges.{elsewhere.pk}"),
        ([{"title": "ok"}], {str(cited.pk): 1}, f"edges.{cited.pk}"),
        ([{"title": "ok"}], [cited.pk], "edges"),
    ]
    count = Entry.objects.filter(bank=bank).count()

    def split(parts, edges, reason="why"):
        # The action: its declaration checks the body's shape, the service the bank's side.
        body = {"parts": parts, "reason": reason, **({"edges": edges} if edges is not None else {})}
        caller = Caller.system(via="command")
        return SplitEntry.prepare(caller, bank, ids={"id": original.short_id}, body=body).run()

    for parts, edges, field in cases:
        with pytest.raises(InvalidInput) as exc:
            split(parts, edges)
        assert exc.value.code == "invalid_split" and field in exc.value.fields, exc.value.fields
    with pytest.raises(InvalidInput) as exc:
        split([{"title": "ok"}], None, reason="")
    assert exc.value.code == "reason_required"
    assert Entry.objects.filter(bank=bank).count() == count  # nothing was written


def test_split_endpoint(bank, broad_entry, client_rw, token_client):
    original, cited, stays, corrects = broad_entry
    url = f"/api/v1/banks/acme/entries/{original.short_id}/split"
    payload = {
        "parts": [{"title": "Refunds only", "content": "Refund rules."}],
        "edges": {str(corrects.pk): 0},
        "reason": "Refunds deserve their own entry.",
    }
    writer = token_client(bank, scopes="read,write")
    assert writer.post(url, payload, format="json").status_code == 403
    response = client_rw.post(url, payload, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    part = Entry.objects.get(bank=bank, short_id=body["parts"][0])
    assert body["operation"] and part.title == "Refunds only"
    assert Edge.objects.filter(
        from_entry=part, to_entry=original, type__name="split_from", invalidated_at__isnull=True
    ).exists()
    bad = client_rw.post(url, {**payload, "extra": 1}, format="json")
    assert bad.status_code == 400
