"""Writes that help the writer: note corrections, warnings, similar entries on a new learning."""

from __future__ import annotations

import pytest

from graph.models import Edge
from kb.models import Operation

pytestmark = pytest.mark.django_db

EDGES = "/api/v1/banks/acme/edges"


def test_patch_corrects_a_note_by_appending_a_row(client_rw, make_entry):
    a, b = make_entry("Rate engine"), make_entry("Fuel index API")
    made = client_rw.post(
        EDGES, {"from": a.short_id, "to": b.short_id, "relation": "requires"}, format="json"
    )
    assert made.status_code == 201
    assert [w["code"] for w in made.json()["warnings"]] == ["connection_without_note"]
    old_id = made.json()["id"]
    fixed = client_rw.patch(
        f"{EDGES}/{old_id}",
        {"note": "Read before changing the surcharge formula.", "reason": "add the why"},
        format="json",
    )
    assert fixed.status_code == 200, fixed.content
    body = fixed.json()
    assert body["id"] != old_id and body["note"] == "Read before changing the surcharge formula."
    old = Edge.objects.get(pk=old_id)
    assert old.invalidated_at is not None and old.note == ""  # the old belief stays readable
    assert Operation.objects.filter(kind="renote").count() == 1
    again = client_rw.patch(
        f"{EDGES}/{body['id']}",
        {"note": "Read before changing the surcharge formula.", "reason": "same"},
        format="json",
    )
    assert again.status_code == 400 and again.json()["error"]["code"] == "same_note"
    no_reason = client_rw.patch(f"{EDGES}/{body['id']}", {"note": "x"}, format="json")
    assert no_reason.status_code == 400
    extra = client_rw.patch(
        f"{EDGES}/{body['id']}", {"note": "x", "reason": "r", "relation": "cites"}, format="json"
    )
    assert extra.status_code == 400 and extra.json()["error"]["fields"] == {
        "relation": "Unknown field."
    }
    closed = client_rw.patch(f"{EDGES}/{old_id}", {"note": "x", "reason": "r"}, format="json")
    assert closed.status_code == 409


def test_patch_note_needs_write_scope_and_the_bank(bank, other_bank, token_client, make_entry):
    from graph.edges.links import link

    a, b = make_entry("A"), make_entry("B")
    edge = link(bank, {"from": a.short_id, "to": b.short_id, "relation": "cites"})
    reader = token_client(bank, scopes="read")
    assert (
        reader.patch(f"{EDGES}/{edge.pk}", {"note": "n", "reason": "r"}, format="json").status_code
        == 403
    )
    stranger = token_client(other_bank)
    assert (
        stranger.patch(
            f"{EDGES}/{edge.pk}", {"note": "n", "reason": "r"}, format="json"
        ).status_code
        == 404
    )


def test_a_noted_link_has_no_warning(client_rw, make_entry):
    a, b = make_entry("Rate engine"), make_entry("Fuel index API")
    made = client_rw.post(
        EDGES,
        {
            "from": a.short_id,
            "to": b.short_id,
            "relation": "requires",
            "note": "Feeds the surcharge.",
        },
        format="json",
    )
    assert made.status_code == 201 and made.json()["warnings"] == []


@pytest.mark.model
def test_a_new_learning_hears_about_its_near_duplicate(client_rw, make_entry, bank):
    from kb.models import Entry
    from kb.services.embedding import embed_entries

    first = make_entry(
        "Playwright login 403 on production",
        content="Production login with Playwright answers 403 unless the session cookie is set "
        "from the SSO callback before navigating; set it in globalSetup.",
    )
    make_entry("Quarterly tax filing calendar", content="Filing deadlines for VAT returns.")
    embed_entries(Entry.objects.filter(bank=bank))
    body = {
        "title": "Playwright gets 403 logging in to production",
        "content": "Playwright's production login returns 403 unless the SSO session cookie is "
        "set before navigating; do it in globalSetup.",
        "kind": "gotcha",
        "lifetime": {"durable": True},
        "connections": [{"id": first.short_id, "relation": "see_also"}],
    }
    refused = client_rw.post("/api/v1/banks/acme/entries", body, format="json")
    # The same learning reworded is refused as a duplicate of ``first`` (409, naming it);
    # stored anyway on purpose, it still hears which entries it lands near.
    assert refused.status_code == 409, refused.content
    assert refused.json()["error"]["fields"] == {"existing": first.short_id}
    made = client_rw.post(
        "/api/v1/banks/acme/entries", {**body, "allow_duplicate": True}, format="json"
    )
    assert made.status_code == 201, made.content
    data = made.json()
    assert data["similar"] and data["similar"][0]["id"] == first.short_id
    assert all(s["title"] != "Quarterly tax filing calendar" for s in data["similar"])
    codes = [w["code"] for w in data["warnings"]]
    assert "connection_without_note" in codes
    assert ("duplicate" in codes) == (data["similar"][0]["score"] >= 0.92)
