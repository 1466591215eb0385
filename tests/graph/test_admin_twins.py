"""Every admin write has a REST twin: the same mutation, once through the API on one bank and
once through the admin on an identical bank, leaves the same rows and the same operation kinds.

Rows are compared by titles, not ids (the banks are different). Actors and reasons differ by
design (a token vs a staff user); so does an edge's ``source`` when staff link (``staff``) vs
an agent (``author``), which is why ``link`` compares everything but the source.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from graph.edges.links import link
from graph.models import Alias, Edge, EdgeType, MergeProposal
from graph.resolution.aliases import add_alias
from kb.models import Bank, Entry, EntryKind, Operation
from kb.services.entries import clean_entry_data, create_entry

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _world(bank: Bank) -> dict:
    """Alpha -cites-> Beta -cites-> Gamma, Beta aka "the beta", Delta alone."""

    def entry(title: str) -> Entry:
        data = {"title": title, "content": f"What {title} says.", "lifetime": {"durable": True}}
        return create_entry(bank, clean_entry_data(bank, data))

    alpha, beta, gamma, delta = (entry(t) for t in ("Alpha", "Beta", "Gamma", "Delta"))
    link(bank, {"from": alpha.short_id, "to": beta.short_id, "relation": "cites"})
    link(bank, {"from": beta.short_id, "to": gamma.short_id, "relation": "cites"})
    add_alias(bank, beta, "the beta")
    return {e.title: e for e in (alpha, beta, gamma, delta)}


@pytest.fixture
def twins(db, token_client):
    rest_bank = Bank.objects.create(slug="rest", name="REST side")
    admin_bank = Bank.objects.create(slug="adm", name="Admin side")
    return {
        "rest": (rest_bank, _world(rest_bank)),
        "admin": (admin_bank, _world(admin_bank)),
        "api": token_client(rest_bank),
    }


def shape(bank: Bank, *, sources: bool = True) -> dict:
    """The bank's rows as a curator would describe them, plus its operation kinds."""
    ids = dict(Entry.objects.filter(bank=bank).values_list("short_id", "title"))

    def words(text: str) -> str:  # ids differ between the banks; titles do not
        for sid, title in ids.items():
            text = text.replace(sid, f"<{title}>")
        return text

    entries = sorted(
        (
            e.title,
            e.status,
            e.kind.name,
            e.summary,
            e.content,
            e.retired_reason,
            e.retired_evidence,
            e.merged_into.title if e.merged_into else None,
            e.verified_at is not None,
        )
        for e in Entry.objects.filter(bank=bank).select_related("kind", "merged_into")
    )
    edges = sorted(
        (
            e.from_entry.title,
            e.type.name,
            e.to_entry.title,
            words(e.note),
            e.source if sources else "",
            e.invalidated_at is None,
            e.replaces.type.name if e.replaces else None,
        )
        for e in Edge.objects.filter(bank=bank).select_related(
            "from_entry", "to_entry", "type", "replaces__type"
        )
    )
    aliases = sorted(  # a merged entry's id becomes an alias: name it by that entry's title
        (f"id of {ids[a.surface]}" if a.surface in ids else a.surface, a.entry.title)
        for a in Alias.objects.filter(bank=bank).select_related("entry")
    )
    operations = [
        (op.kind, sorted(op.details)) for op in Operation.objects.filter(bank=bank).order_by("pk")
    ]
    return {"entries": entries, "edges": edges, "aliases": aliases, "operations": operations}


def assert_same(twins, *, sources: bool = True) -> None:
    rest, admin = (
        shape(twins["rest"][0], sources=sources),
        shape(twins["admin"][0], sources=sources),
    )
    assert rest == admin


def api_url(bank: Bank, tail: str) -> str:
    return f"/api/v1/banks/{bank.slug}/{tail}"


CHANGELIST = "admin:kb_entry_changelist"


def test_delete_bridges_the_same_through_rest_and_admin(twins, admin_client):
    rest_bank, rest = twins["rest"]
    admin_bank, adm = twins["admin"]
    response = twins["api"].delete(
        api_url(rest_bank, f"entries/{rest['Beta'].short_id}?reason=gone")
    )
    assert response.status_code == 200, response.content

    url = reverse("admin:kb_entry_delete", args=[adm["Beta"].pk])
    page = admin_client.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    # The confirmation says what will be bridged, in titles.
    # cites is not transitive, so Alpha→Beta→Gamma becomes Alpha —see_also→ Gamma.
    assert "Connections bridged (1)" in body and "“Alpha” —see_also→ “Gamma”" in body
    assert "the beta" in body  # the alias that goes
    refused = admin_client.post(url, {"reason": ""})
    assert refused.status_code == 200 and Entry.objects.get(pk=adm["Beta"].pk).status == "live"
    done = admin_client.post(url, {"reason": "gone"})
    assert done.status_code == 302

    assert_same(twins)
    kinds = [k for k, _ in shape(admin_bank)["operations"]]
    assert kinds[-1] == "delete"
    bridged = Edge.objects.get(bank=admin_bank, source="bridged")
    assert (bridged.from_entry.title, bridged.to_entry.title) == ("Alpha", "Gamma")


def test_merge_is_the_same_through_rest_and_admin(twins, admin_client):
    rest_bank, rest = twins["rest"]
    _, adm = twins["admin"]
    response = twins["api"].post(
        api_url(rest_bank, "merges"),
        {"keep": rest["Alpha"].short_id, "away": rest["Beta"].short_id, "reason": "dupe"},
        format="json",
    )
    assert response.status_code == 201, response.content
    action = {
        "action": "merge_selected",
        "_selected_action": [str(adm["Alpha"].pk), str(adm["Beta"].pk)],
        "keep": str(adm["Alpha"].pk),
        "confirm": "yes",
        "reason": "dupe",
    }
    assert admin_client.post(reverse(CHANGELIST), action).status_code == 302
    assert_same(twins)


def test_retire_restore_and_verify_are_the_same_through_rest_and_admin(twins, admin_client):
    rest_bank, rest = twins["rest"]
    _, adm = twins["admin"]
    api = twins["api"]
    sid = rest["Gamma"].short_id
    retire = {"reason": "replaced", "evidence": "The old pipeline was switched off on 1 May."}
    assert (
        api.post(api_url(rest_bank, f"entries/{sid}/retire"), retire, format="json").status_code
        == 200
    )
    selected = {"_selected_action": [str(adm["Gamma"].pk)]}
    page = admin_client.post(reverse(CHANGELIST), {**selected, "action": "retire_selected"})
    assert page.status_code == 200 and b"Evidence (required)" in page.content
    no_evidence = admin_client.post(
        reverse(CHANGELIST),
        {**selected, "action": "retire_selected", "confirm": "yes", "reason": "replaced"},
    )
    assert no_evidence.status_code == 200 and Entry.objects.get(pk=adm["Gamma"].pk).status == "live"
    done = admin_client.post(
        reverse(CHANGELIST), {**selected, "action": "retire_selected", "confirm": "yes", **retire}
    )
    assert done.status_code == 302
    assert_same(twins)

    assert (
        api.post(api_url(rest_bank, f"entries/{sid}/restore"), {}, format="json").status_code == 200
    )
    admin_client.post(reverse(CHANGELIST), {**selected, "action": "restore_selected"})
    assert_same(twins)

    assert api.post(api_url(rest_bank, f"entries/{sid}/verify")).status_code == 200
    admin_client.post(reverse(CHANGELIST), {**selected, "action": "mark_verified"})
    assert_same(twins)
    assert [k for k, _ in shape(twins["admin"][0])["operations"]][-3:] == [
        "retire",
        "restore",
        "verify",
    ]


def _entry_form(entry: Entry | None, bank: Bank, **overrides) -> dict:
    fact = EntryKind.objects.get(bank=None, name="fact")
    data = {
        "title": entry.title if entry else "",
        "key": "",
        "summary": entry.summary if entry else "",
        "content": entry.content if entry else "",
        "useful_for": "",
        "steps": "",
        "metadata": "{}",
        "kind": str(entry.kind_id if entry else fact.pk),
        "systems": "",
        "tasks": "",
        "durable": "on",
        "expires_at": "",
        "resolved_by": "",
        "anchor_files": "",
        "anchor_symbols": "",
        "_save": "Save",
    }
    if entry is None:
        data["bank"] = str(bank.pk)
    data.update(overrides)
    return data


def test_entry_create_and_edit_are_the_same_through_rest_and_admin(twins, admin_client):
    rest_bank, rest = twins["rest"]
    admin_bank, adm = twins["admin"]
    api = twins["api"]
    created = api.post(
        api_url(rest_bank, "entries"),
        {
            "title": "Epsilon",
            "content": "Releases ship on Tuesdays.",
            "summary": "Ship day",
            "kind": "fact",
            "lifetime": {"durable": True},
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    response = admin_client.post(
        reverse("admin:kb_entry_add"),
        _entry_form(
            None,
            admin_bank,
            title="Epsilon",
            content="Releases ship on Tuesdays.",
            summary="Ship day",
        ),
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert_same(twins)

    patched = api.patch(
        api_url(rest_bank, f"entries/{rest['Delta'].short_id}"), {"title": "Delta 2"}, format="json"
    )
    assert patched.status_code == 200
    url = reverse("admin:kb_entry_change", args=[adm["Delta"].pk])
    response = admin_client.post(url, _entry_form(adm["Delta"], admin_bank, title="Delta 2"))
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert_same(twins)
    rest_op = Operation.objects.filter(bank=rest_bank).latest("pk")
    admin_op = Operation.objects.filter(bank=admin_bank).latest("pk")
    assert rest_op.details["fields"] == admin_op.details["fields"] == ["title"]


def test_admin_entry_form_reports_the_services_errors(twins, admin_client):
    admin_bank, adm = twins["admin"]
    url = reverse("admin:kb_entry_change", args=[adm["Delta"].pk])
    count = Operation.objects.count()
    # A key another entry holds: the service's duplicate_key check, shown on the field.
    Entry.objects.filter(pk=adm["Alpha"].pk).update(key="taken")
    response = admin_client.post(url, _entry_form(adm["Delta"], admin_bank, key="taken"))
    assert response.status_code == 200
    assert "key" in response.context["adminform"].form.errors
    # Status is not a form field: posting one changes nothing.
    response = admin_client.post(url, _entry_form(adm["Delta"], admin_bank, status="deleted"))
    assert Entry.objects.get(pk=adm["Delta"].pk).status == "live"
    assert Operation.objects.count() == count


def test_link_unlink_and_retype_are_the_same_through_rest_and_admin(twins, admin_client):
    rest_bank, rest = twins["rest"]
    _, adm = twins["admin"]
    api = twins["api"]
    made = api.post(
        api_url(rest_bank, "edges"),
        {"from": rest["Delta"].short_id, "to": rest["Alpha"].short_id, "relation": "see_also"},
        format="json",
    )
    assert made.status_code == 201, made.content
    see_also = EdgeType.objects.get(bank=None, name="see_also")
    response = admin_client.post(
        reverse("admin:graph_edge_add"),
        {
            "from_entry": str(adm["Delta"].pk),
            "to_entry": str(adm["Alpha"].pk),
            "type": str(see_also.pk),
            "label": "",
            "note": "",
            "valid_from_0": "",
            "valid_from_1": "",
            "valid_to_0": "",
            "valid_to_1": "",
            "_save": "Save",
        },
    )
    assert response.status_code == 302
    assert_same(twins, sources=False)

    rest_edge = Edge.objects.get(bank=rest_bank, pk=made.json()["id"])
    admin_edge = Edge.objects.get(from_entry=adm["Delta"], invalidated_at__isnull=True)
    retyped = api.post(
        api_url(rest_bank, f"edges/{rest_edge.pk}/retype"),
        {"relation": "cites", "reason": "it cites it"},
        format="json",
    )
    assert retyped.status_code == 200, retyped.content
    cites = EdgeType.objects.get(bank=None, name="cites")
    response = admin_client.post(
        reverse("admin:graph_edge_change", args=[admin_edge.pk]),
        {"type": str(cites.pk), "label": "", "note": "", "reason": "it cites it"},
    )
    assert response.status_code == 302
    assert_same(twins, sources=False)

    rest_edge = Edge.objects.get(bank=rest_bank, replaces=rest_edge)
    admin_edge = Edge.objects.get(replaces=admin_edge)
    unlinked = api.post(
        api_url(rest_bank, f"edges/{rest_edge.pk}/unlink"), {"reason": "wrong"}, format="json"
    )
    assert unlinked.status_code == 200
    # Unlink from the entry page: the edge row links to the unlink page, which comes back.
    entry_page = admin_client.get(reverse("admin:kb_entry_change", args=[adm["Delta"].pk]))
    unlink_url = reverse("admin:graph_edge_unlink", args=[admin_edge.pk])
    assert unlink_url in entry_page.content.decode()
    back = reverse("admin:kb_entry_change", args=[adm["Delta"].pk])
    response = admin_client.post(f"{unlink_url}?next={back}", {"reason": "wrong"})
    assert response.status_code == 302 and response.url == back
    assert_same(twins, sources=False)


def test_split_is_the_same_through_rest_and_admin(twins, admin_client):
    rest_bank, rest = twins["rest"]
    _, adm = twins["admin"]
    rest_edge = Edge.objects.get(from_entry=rest["Beta"])
    response = twins["api"].post(
        api_url(rest_bank, f"entries/{rest['Beta'].short_id}/split"),
        {
            "parts": [{"title": "Beta one", "summary": "First half", "kind": "fact"}],
            "edges": {str(rest_edge.pk): 0},
            "reason": "two topics",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    admin_edge = Edge.objects.get(from_entry=adm["Beta"])
    response = admin_client.post(
        reverse(CHANGELIST),
        {
            "action": "split_selected",
            "_selected_action": [str(adm["Beta"].pk)],
            "confirm": "yes",
            "parts": "Beta one | First half",
            f"edge_{admin_edge.pk}": "1",
            "reason": "two topics",
        },
    )
    assert response.status_code == 302
    assert_same(twins, sources=False)  # staff's split edges say "staff", an agent's "author"


def test_revert_is_the_same_through_rest_and_admin(twins, admin_client):
    rest_bank, rest = twins["rest"]
    admin_bank, adm = twins["admin"]
    api = twins["api"]
    api.delete(api_url(rest_bank, f"entries/{rest['Beta'].short_id}?reason=oops"))
    admin_client.post(reverse("admin:kb_entry_delete", args=[adm["Beta"].pk]), {"reason": "oops"})
    rest_op = Operation.objects.filter(bank=rest_bank, kind="delete").get()
    admin_op = Operation.objects.filter(bank=admin_bank, kind="delete").get()
    assert (
        api.post(
            api_url(rest_bank, f"operations/{rest_op.pk}/revert"), {"reason": "undo"}, format="json"
        ).status_code
        == 200
    )
    page = admin_client.get(reverse("admin:kb_operation_revert", args=[admin_op.pk]))
    body = page.content.decode()
    # The preview in words: what the delete did and what reverting restores, by title.
    assert "Linked “Alpha” (" in body and "Unlinked “Alpha” (" in body
    assert "status deleted → live" in body
    response = admin_client.post(
        reverse("admin:kb_operation_revert", args=[admin_op.pk]), {"reason": "undo"}
    )
    assert response.status_code == 302
    assert_same(twins)


def test_proposal_decisions_are_the_same_through_rest_and_admin(twins, admin_client):
    rest_bank, rest = twins["rest"]
    admin_bank, adm = twins["admin"]
    api = twins["api"]
    pairs = {}
    for side, bank, world in (("rest", rest_bank, rest), ("admin", admin_bank, adm)):
        pairs[side] = (
            MergeProposal.objects.create(
                bank=bank,
                keep=world["Alpha"],
                away=world["Beta"],
                score=0.93,
                reasons={"verdict": "likely duplicate", "cosine": 0.95},
            ),
            MergeProposal.objects.create(
                bank=bank, keep=world["Gamma"], away=world["Delta"], score=0.75
            ),
        )
    listed = api.get(api_url(rest_bank, "proposals?status=open&limit=1")).json()
    assert [p["id"] for p in listed["results"]] == [pairs["rest"][0].pk]
    assert listed["results"][0]["a"]["title"] == "Alpha"
    assert listed["results"][0]["reasons"][0] == "likely duplicate"
    second = api.get(api_url(rest_bank, f"proposals?status=open&limit=1&cursor={listed['next']}"))
    assert [p["id"] for p in second.json()["results"]] == [pairs["rest"][1].pk]
    assert second.json()["next"] is None

    approve = api.post(
        api_url(rest_bank, f"proposals/{pairs['rest'][0].pk}/decide"),
        {"decision": "approve", "reason": "same thing"},
        format="json",
    )
    assert approve.status_code == 200, approve.content
    assert approve.json()["operation"] and approve.json()["proposal"]["status"] == "approved"
    reject = api.post(
        api_url(rest_bank, f"proposals/{pairs['rest'][1].pk}/decide"),
        {"decision": "reject", "reason": "different"},
        format="json",
    )
    assert reject.status_code == 200 and reject.json()["operation"] is None

    for proposal, decision, reason in (
        (pairs["admin"][0], "approve", "same thing"),
        (pairs["admin"][1], "reject", "different"),
    ):
        url = reverse("admin:graph_mergeproposal_decide", args=[proposal.pk])
        assert admin_client.post(url, {"decision": decision, "reason": reason}).status_code == 302
    assert_same(twins)
    for side in ("rest", "admin"):
        approved, rejected = (MergeProposal.objects.get(pk=p.pk) for p in pairs[side])
        assert (approved.status, rejected.status) == ("approved", "rejected")
        assert approved.operation.kind == "merge" and rejected.operation is None
        assert rejected.reasons["decision"]["reason"] == "different"

    again = api.post(
        api_url(rest_bank, f"proposals/{pairs['rest'][1].pk}/decide"),
        {"decision": "approve"},
        format="json",
    )
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_decided"


def test_proposal_api_refuses_bad_input_and_other_banks(twins, token_client):
    rest_bank, rest = twins["rest"]
    admin_bank, adm = twins["admin"]
    api = twins["api"]
    foreign = MergeProposal.objects.create(
        bank=admin_bank, keep=adm["Alpha"], away=adm["Beta"], score=0.9
    )
    url = api_url(rest_bank, f"proposals/{foreign.pk}/decide")
    assert api.post(url, {"decision": "approve"}, format="json").status_code == 404
    assert api.get(api_url(admin_bank, "proposals")).status_code == 404
    own = MergeProposal.objects.create(
        bank=rest_bank, keep=rest["Alpha"], away=rest["Beta"], score=0.9
    )
    url = api_url(rest_bank, f"proposals/{own.pk}/decide")
    for body in (
        {"decision": "maybe"},
        {"decision": "approve", "keep": 5},
        {"decision": "reject", "x": 1},
    ):
        response = api.post(url, body, format="json")
        assert response.status_code == 400, (body, response.content)
    assert api.post(url, {"decision": "approve", "keep": "nope"}, format="json").status_code == 400
    assert api.get(api_url(rest_bank, "proposals?status=weird")).status_code == 400
    assert api.get(api_url(rest_bank, "proposals?cursor=%%%")).status_code == 400
    writer = token_client(rest_bank, scopes="read,write")
    assert writer.get(api_url(rest_bank, "proposals")).status_code == 403
    assert MergeProposal.objects.get(pk=own.pk).status == "pending"
