"""Lifecycle over REST: retire with evidence (and supersession), restore, verify, anchors, staleness."""

import datetime as dt

import pytest
from django.utils import timezone

from graph.models import Edge
from kb.models import Entry

pytestmark = pytest.mark.django_db


def test_retire_requires_reason_and_evidence(client_rw, make_entry):
    old = make_entry("Sessions live in a signed cookie")
    url = f"/api/v1/banks/acme/entries/{old.short_id}/retire"
    assert (
        client_rw.post(url, {"reason": "reversed"}, format="json").json()["error"]["code"]
        == "evidence_required"
    )
    assert (
        client_rw.post(url, {"evidence": "x"}, format="json").json()["error"]["code"]
        == "reason_required"
    )
    old.refresh_from_db()
    assert old.status == "live"


def test_retire_with_superseded_by_then_restore(client_rw, make_entry):
    old = make_entry("Sessions live in a signed cookie")
    new = make_entry("Sessions live in Redis")
    body = {
        "reason": "revocation matters more",
        "evidence": "ADR-31: 'we move sessions to Redis'",
        "superseded_by": new.short_id,
    }
    response = client_rw.post(
        f"/api/v1/banks/acme/entries/{old.short_id}/retire", body, format="json"
    )
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["status"] == "retired" and data["retired"] == {
        "reason": body["reason"],
        "evidence": body["evidence"],
    }
    assert Edge.objects.get(type__name="supersedes").from_entry_id == new.pk
    again = client_rw.post(f"/api/v1/banks/acme/entries/{old.short_id}/retire", body, format="json")
    assert again.status_code == 409 and again.json()["error"]["code"] == "not_live"
    restored = client_rw.post(
        f"/api/v1/banks/acme/entries/{old.short_id}/restore", {"reason": "mistake"}, format="json"
    )
    assert restored.status_code == 200 and restored.json()["status"] == "live"
    assert (
        client_rw.post(
            f"/api/v1/banks/acme/entries/{old.short_id}/restore", {}, format="json"
        ).status_code
        == 409
    )


def test_retired_result_is_visible_and_carries_replacement(
    client_rw, bank, make_entry, hashing_embedder
):
    from kb.services.embedding import embed_entries

    old = make_entry("signed cookie sessions", content="signed cookie sessions decision")
    new = make_entry("redis backed store", content="move state to redis")
    embed_entries(Entry.objects.filter(bank=bank), embedder=hashing_embedder)
    client_rw.post(
        f"/api/v1/banks/acme/entries/{old.short_id}/retire",
        {"reason": "r", "evidence": "e", "superseded_by": new.short_id},
        format="json",
    )
    body = client_rw.post(
        "/api/v1/banks/acme/query", {"query": "signed cookie sessions", "limit": 1}, format="json"
    ).json()
    top = body["results"][0]
    assert (
        top["id"] == old.short_id
        and top["status"] == "retired"
        and top["lifecycle"] == "retired: r"
    )
    assert (
        top["neighbors"][0]["id"] == new.short_id
        and top["neighbors"][0]["relation"] == "supersedes"
    )


def test_expired_entry_shows_why(client_rw, bank, make_entry, hashing_embedder):
    from kb.services.embedding import embed_entries

    make_entry(
        "quarterly freeze window",
        content="freeze window rules",
        lifetime={"expires_at": "2020-01-31"},
    )
    embed_entries(Entry.objects.filter(bank=bank), embedder=hashing_embedder)
    body = client_rw.post(
        "/api/v1/banks/acme/query", {"query": "freeze window", "limit": 1}, format="json"
    ).json()
    assert body["results"][0]["lifecycle"] == "expired on 2020-01-31"
    hidden = client_rw.post(
        "/api/v1/banks/acme/query",
        {"query": "freeze window", "include_retired": False},
        format="json",
    ).json()
    assert hidden["results"] == []


def test_recall_anchors(client_rw, make_entry):
    lesson = make_entry(
        "Rate limiter must stay in front of auth",
        anchors={"files": ["src/middleware/index.ts"], "symbols": ["buildMiddlewareChain"]},
    )
    folder = make_entry(
        "Everything in middleware is order-sensitive",
        anchors={"files": ["src/middleware/"], "symbols": []},
    )
    make_entry("Unrelated", anchors={"files": ["src/other.ts"], "symbols": []})
    body = client_rw.post(
        "/api/v1/banks/acme/recall/anchors",
        {"files": ["./src/middleware/index.ts"], "symbols": ["buildMiddlewareChain"]},
        format="json",
    ).json()
    ids = [r["id"] for r in body["results"]]
    assert ids == [lesson.short_id, folder.short_id]
    assert body["results"][0]["matched"] == {
        "files": ["src/middleware/index.ts"],
        "symbols": ["buildMiddlewareChain"],
    }
    bad = client_rw.post("/api/v1/banks/acme/recall/anchors", {"files": "src/x.ts"}, format="json")
    assert bad.status_code == 400


def test_stale_listing(client_rw, make_entry):
    never = make_entry("Never verified")
    old = make_entry("Verified long ago")
    fresh = make_entry("Verified today")
    Entry.objects.filter(pk=old.pk).update(verified_at=timezone.now() - dt.timedelta(days=200))
    Entry.objects.filter(pk=fresh.pk).update(verified_at=timezone.now())
    body = client_rw.get("/api/v1/banks/acme/stale", {"days": 90}).json()
    assert [r["id"] for r in body["results"]] == [never.short_id, old.short_id]
    assert client_rw.get("/api/v1/banks/acme/stale", {"days": "x"}).status_code == 400


@pytest.mark.parametrize("action", ["retire", "restore"])
@pytest.mark.parametrize("entry_id", ["nosuch00", "%1E", "%20"])
def test_a_lifecycle_call_on_an_id_naming_no_entry_is_404(client_rw, action, entry_id):
    # The id of the URL names no entry (a control character or a space strips to nothing):
    # the same 404 as GET, never a 400 about a body field.
    body = {"reason": "gone"} | ({"evidence": "The vendor said so."} if action == "retire" else {})
    response = client_rw.post(
        f"/api/v1/banks/acme/entries/{entry_id}/{action}", body, format="json"
    )
    assert response.status_code == 404, response.content
    assert response.json()["error"]["code"] == "entry_not_found"
