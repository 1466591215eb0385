"""The graph admin: every page renders, and every write goes through a service."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from graph.edges.links import link, unlink
from graph.models import Alias, Edge, MergeProposal
from graph.resolution.aliases import add_alias
from kb.models import Entry, Operation, OperationKind
from tests.graph.admin_support import (  # noqa: F401 - fast_passwords is an autouse fixture
    COPIED,
    core,
    fast_passwords,
    messages_of,
    rows,
    snapshot,
)

pytestmark = pytest.mark.django_db


# --- pages render -----------------------------------------------------------------------------


@pytest.fixture
def graph_rows(bank, make_entry, linked):
    a, b = make_entry("Alpha"), make_entry("Beta")
    edge = linked(a, b, "cites", note="Why a reader goes there.")
    closed = linked(b, a, "see_also")
    unlink(bank, closed.pk, "wrong")
    alias = add_alias(bank, a, "the alpha")
    proposal = MergeProposal.objects.create(bank=bank, keep=a, away=b, score=0.93)
    return {"edge": edge, "closed": closed, "alias": alias, "proposal": proposal, "a": a}


@pytest.mark.parametrize("model", ["edgetype", "edge", "alias", "mergeproposal"])
def test_graph_changelists_render(admin_client, graph_rows, model):
    response = admin_client.get(reverse(f"admin:graph_{model}_changelist"))
    assert response.status_code == 200
    assert response.context["cl"].result_count >= 1


def test_graph_pages_render(admin_client, graph_rows):
    edge, closed, alias = graph_rows["edge"], graph_rows["closed"], graph_rows["alias"]
    urls = [
        reverse("admin:graph_edge_add"),
        reverse("admin:graph_edge_change", args=[edge.pk]),
        reverse("admin:graph_edge_history", args=[edge.pk]),
        reverse("admin:graph_alias_add"),
        reverse("admin:graph_alias_change", args=[alias.pk]),
        reverse("admin:graph_alias_history", args=[alias.pk]),
        reverse("admin:graph_edgetype_change", args=[core("cites").pk]),
        reverse("admin:kb_operation_changelist"),
    ]
    for url in urls:
        assert admin_client.get(url).status_code == 200, url

    # An open edge is editable; a closed one is the record of a belief: view only.
    assert admin_client.get(urls[1]).context["has_change_permission"]
    page = admin_client.get(reverse("admin:graph_edge_change", args=[closed.pk]))
    assert page.status_code == 200 and not page.context["has_change_permission"]
    post = admin_client.post(
        reverse("admin:graph_edge_change", args=[closed.pk]),
        {"type": str(core("cites").pk), "note": "x", "reason": "y"},
    )
    assert post.status_code == 403
    assert Edge.objects.get(pk=closed.pk).type.name == "see_also"


def test_history_is_read_only(admin_client, graph_rows):
    edge = graph_rows["edge"]
    version = edge.history.latest()
    url = reverse("admin:graph_edge_simple_history", args=[edge.pk, version.history_id])
    assert admin_client.get(url).status_code == 200
    assert admin_client.post(url, {"note": "rewritten"}).status_code == 403
    assert Edge.objects.get(pk=edge.pk).note == "Why a reader goes there."
    history = admin_client.get(reverse("admin:graph_edge_history", args=[edge.pk]))
    assert str(version.operation_id) in history.content.decode()


# --- edge changelist --------------------------------------------------------------------------


def test_edge_changelist_filters(admin_client, bank, make_entry):
    a, b, c = make_entry("Alpha"), make_entry("Bravo"), make_entry("Charlie")
    cites = link(bank, {"from": a.short_id, "to": b.short_id, "relation": "cites", "note": "Why."})
    plain = link(bank, {"from": b.short_id, "to": c.short_id, "relation": "see_also"})
    imported = link(
        bank, {"from": a.short_id, "to": c.short_id, "relation": "see_also"}, source="import"
    )
    closed = link(bank, {"from": c.short_id, "to": a.short_id, "relation": "cites"})
    unlink(bank, closed.pk, "wrong")
    future = link(
        bank,
        {"from": c.short_id, "to": b.short_id, "relation": "precedes", "valid_from": "2999-01-01"},
    )
    url = reverse("admin:graph_edge_changelist")

    assert rows(admin_client.get(url)) == {cites.pk, plain.pk, imported.pk, closed.pk, future.pk}
    assert rows(admin_client.get(url, {"type__id__exact": core("cites").pk})) == {
        cites.pk,
        closed.pk,
    }
    assert rows(admin_client.get(url, {"source__exact": "import"})) == {imported.pk}
    assert rows(admin_client.get(url, {"has_note": "yes"})) == {cites.pk}
    assert cites.pk not in rows(admin_client.get(url, {"has_note": "no"}))
    assert rows(admin_client.get(url, {"state": "current"})) == {cites.pk, plain.pk, imported.pk}
    assert rows(admin_client.get(url, {"state": "closed"})) == {closed.pk}
    assert rows(admin_client.get(url, {"state": "not_valid_now"})) == {future.pk}
    assert rows(admin_client.get(url, {"q": "bravo"})) == {cites.pk, plain.pk, future.pk}
    assert rows(admin_client.get(url, {"bank__id__exact": bank.pk})) == {
        cites.pk,
        plain.pk,
        imported.pk,
        closed.pk,
        future.pk,
    }


def test_edge_changelist_queries_do_not_grow_with_rows(admin_client, bank, make_entry):
    entries = [make_entry(f"E{i}") for i in range(6)]
    link(bank, {"from": entries[0].short_id, "to": entries[1].short_id, "relation": "cites"})
    url = reverse("admin:graph_edge_changelist")
    admin_client.get(url)  # warm the session and content types
    with CaptureQueriesContext(connection) as few:
        admin_client.get(url)
    for i in range(1, 5):
        link(
            bank, {"from": entries[i].short_id, "to": entries[i + 1].short_id, "relation": "cites"}
        )
    with CaptureQueriesContext(connection) as many:
        assert admin_client.get(url).context["cl"].result_count == 5
    assert len(many) == len(few)


# --- adding, changing and unlinking edges -----------------------------------------------------


def edge_add_data(source: Entry, target: Entry, relation: str = "cites", **extra) -> dict:
    data = {
        "from_entry": str(source.pk),
        "to_entry": str(target.pk),
        "type": str(core(relation).pk),
        "label": "",
        "note": "",
        "valid_from_0": "",
        "valid_from_1": "",
        "valid_to_0": "",
        "valid_to_1": "",
        "_save": "Save",
    }
    data.update(extra)
    return data


def test_add_edge_goes_through_link(admin_client, bank, make_entry):
    a, b = make_entry("Runbook"), make_entry("Release train")
    response = admin_client.post(
        reverse("admin:graph_edge_add"),
        edge_add_data(a, b, note="Check it before a Tuesday deploy."),
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    edge = Edge.objects.get(from_entry=a, to_entry=b)
    assert edge.type.name == "cites" and edge.source == "staff"
    assert edge.actor == "staff:admin"
    row = edge.history.get()
    operation = Operation.objects.get(pk=row.operation_id)
    assert operation.kind == OperationKind.LINK and operation.details["edges"] == [edge.pk]

    # The duplicate check of link is a form error, not a 500, and writes nothing.
    count = Operation.objects.count()
    again = admin_client.post(reverse("admin:graph_edge_add"), edge_add_data(a, b))
    assert again.status_code == 200
    assert "already exists" in str(again.context["adminform"].form.non_field_errors())
    assert Operation.objects.count() == count


def test_add_edge_with_copied_note_is_refused(admin_client, bank, make_entry):
    a, b = make_entry("Runbook"), make_entry("Release train", content=COPIED)
    edges, operations = Edge.objects.count(), Operation.objects.count()
    response = admin_client.post(
        reverse("admin:graph_edge_add"),
        edge_add_data(a, b, note="It says every deploy waits for the release train on Tuesday."),
    )
    assert response.status_code == 200
    errors = str(response.context["adminform"].form.non_field_errors())
    assert "repeats the target" in errors
    assert (Edge.objects.count(), Operation.objects.count()) == (edges, operations)


def test_change_edge_relation_is_a_retype_and_note_a_correction(admin_client, bank, make_entry):
    a, b = make_entry("A"), make_entry("B")
    edge = link(bank, {"from": a.short_id, "to": b.short_id, "relation": "see_also"})
    url = reverse("admin:graph_edge_change", args=[edge.pk])
    data = {"type": str(core("corrects").pk), "label": "", "note": "", "reason": ""}

    no_reason = admin_client.post(url, data)
    assert no_reason.status_code == 200
    assert "reason" in no_reason.context["adminform"].form.errors
    assert Edge.objects.get(pk=edge.pk).invalidated_at is None

    response = admin_client.post(url, {**data, "reason": "it fixes B"})
    assert response.status_code == 302
    old = Edge.objects.get(pk=edge.pk)
    new = Edge.objects.get(replaces=old)
    assert old.invalidated_at is not None and new.type.name == "corrects" and new.is_current()
    assert Operation.objects.get(pk=new.history.get().operation_id).kind == OperationKind.RETYPE

    url = reverse("admin:graph_edge_change", args=[new.pk])
    response = admin_client.post(
        url,
        {"type": str(core("corrects").pk), "label": "", "note": "Read first.", "reason": "note"},
    )
    assert response.status_code == 302
    corrected = Edge.objects.get(replaces=new)
    assert corrected.note == "Read first." and corrected.type.name == "corrects"
    assert Edge.objects.get(pk=new.pk).invalidated_at is not None


def test_unlink_action_asks_for_a_reason_and_closes(admin_client, bank, make_entry, linked):
    a, b = make_entry("A"), make_entry("B")
    edge = linked(a, b, "cites")
    url = reverse("admin:graph_edge_changelist")
    action = {"action": "unlink_selected", "_selected_action": [str(edge.pk)]}

    confirm = admin_client.post(url, action)
    assert confirm.status_code == 200
    assert [e.pk for e in confirm.context["edges"]] == [edge.pk]
    assert confirm.templates[0].name == "admin/graph/edge/unlink_confirmation.html"

    missing = admin_client.post(url, {**action, "confirm": "yes", "reason": " "})
    assert missing.status_code == 200 and missing.context["error"]
    assert Edge.objects.get(pk=edge.pk).invalidated_at is None

    done = admin_client.post(url, {**action, "confirm": "yes", "reason": "stale"}, follow=True)
    assert any("Unlinked 1 edge" in m for m in messages_of(done))
    edge.refresh_from_db()
    assert edge.invalidated_at is not None and edge.invalidated_reason == "stale"
    operation = Operation.objects.get(pk=edge.history.latest().operation_id)
    assert operation.kind == OperationKind.UNLINK and operation.reason == "stale"


# --- the entry page: inlines ------------------------------------------------------------------


def entry_post_data(entry: Entry) -> dict:
    return {
        "title": entry.title,
        "key": entry.key or "",
        "summary": entry.summary,
        "content": entry.content,
        "useful_for": entry.useful_for,
        "steps": "",
        "metadata": "{}",
        "kind": str(entry.kind_id),
        "status": entry.status,
        "systems": "",
        "tasks": "",
        "durable": "on",
        "expires_at": "",
        "resolved_by": "",
        "retired_reason": "",
        "retired_evidence": "",
        "anchor_files": "",
        "anchor_symbols": "",
        "_save": "Save",
    }


def management(prefix: str, initial: list[int], total: int) -> dict:
    data = {
        f"{prefix}-TOTAL_FORMS": str(total),
        f"{prefix}-INITIAL_FORMS": str(len(initial)),
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }
    for i, pk in enumerate(initial):
        data[f"{prefix}-{i}-id"] = str(pk)
    return data


def test_entry_page_shows_and_adds_edges_and_aliases(admin_client, bank, make_entry, linked):
    entry, out, into = make_entry("Payments"), make_entry("Ledger"), make_entry("Checkout")
    target = make_entry("Refunds", content=COPIED)
    out_edge = linked(entry, out, "requires", note="Posting needs it.")
    in_edge = linked(into, entry, "cites")
    gone = linked(entry, into, "see_also")
    unlink(bank, gone.pk, "wrong")
    add_alias(bank, entry, "payments service")
    url = reverse("admin:kb_entry_change", args=[entry.pk])

    page = admin_client.get(url)
    assert page.status_code == 200
    formsets = {f.formset.prefix: f.formset for f in page.context["inline_admin_formsets"]}
    assert set(formsets) == {"edges_out", "edges_in", "aliases"}
    assert [f.instance.pk for f in formsets["edges_out"].initial_forms] == [out_edge.pk]
    assert [f.instance.pk for f in formsets["edges_in"].initial_forms] == [in_edge.pk]
    body = page.content.decode()
    for text in ("Posting needs it.", out.short_id, into.short_id, "payments service"):
        assert text in body

    data = {
        **entry_post_data(entry),
        **management("edges_out", [out_edge.pk], 2),
        "edges_out-1-type": str(core("see_also").pk),
        "edges_out-1-to_entry": str(target.pk),
        "edges_out-1-label": "",
        "edges_out-1-note": "Refunds reverse these payments.",
        **management("edges_in", [in_edge.pk], 1),
        **management("aliases", [Alias.objects.get(entry=entry).pk], 2),
        "aliases-1-surface": "PaySvc",
    }
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.context and response.context["errors"]
    new_edge = Edge.objects.get(from_entry=entry, to_entry=target)
    assert new_edge.note == "Refunds reverse these payments."
    assert Operation.objects.get(pk=new_edge.history.get().operation_id).kind == "link"
    alias = Alias.objects.get(bank=bank, normalized="paysvc")
    assert alias.entry == entry and alias.history.get().operation_id is not None

    # The note rule applies to inline rows too: the page shows the error, nothing is written.
    count = Edge.objects.count()
    data["edges_out-1-to_entry"] = str(target.pk)
    data["edges_out-1-type"] = str(core("cites").pk)
    data["edges_out-1-note"] = "Every deploy waits for the release train on Tuesday mornings."
    data["aliases-1-surface"] = ""
    refused = admin_client.post(url, data)
    assert refused.status_code == 200
    assert "repeats the target" in str(refused.context["inline_admin_formsets"][0].formset.errors)
    assert Edge.objects.count() == count


# --- merge and revert through the admin -------------------------------------------------------
