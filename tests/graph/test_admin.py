"""The graph admin: every page renders, and every write goes through a service."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from graph.curation.merge import merge_entries, plan_merge
from graph.curation.revert import revert_plan
from graph.edges.links import link, unlink
from graph.models import Alias, Edge, EdgeType, MergeProposal
from graph.resolution.aliases import add_alias
from kb.models import Entry, Operation, OperationKind

pytestmark = pytest.mark.django_db

COPIED = "Every deploy waits for the release train on Tuesday mornings without exception."


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """admin_client creates a superuser; a cheap hasher keeps that fast."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def rows(response) -> set[int]:
    return {obj.pk for obj in response.context["cl"].result_list}


def snapshot(bank) -> tuple:
    """Every column a merge touches and a revert must restore."""
    entries = list(
        Entry.objects.filter(bank=bank)
        .order_by("pk")
        .values(
            *[
                f.attname
                for f in Entry._meta.concrete_fields
                if f.name not in ("usage_count", "last_used_at")
            ]
        )
    )
    edges = list(Edge.objects.filter(bank=bank).order_by("pk").values())
    aliases = list(Alias.objects.filter(bank=bank).order_by("pk").values())
    return entries, edges, aliases


def core(name: str) -> EdgeType:
    return EdgeType.objects.get(bank=None, name=name)


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


@pytest.fixture
def merge_case(bank, make_entry, linked):
    """keep and away with an edge that re-points, one that collapses and one self-loop."""
    keep = make_entry("Deploy runbook")
    away = make_entry("Deployment runbook (old)", key="runbook:deploy")
    x, y = make_entry("Release train"), make_entry("Hotfix policy")
    linked(x, away, "cites", note="Cites the old runbook.")  # re-pointed: x → keep
    linked(away, y, "requires")  # re-pointed: keep → y
    linked(x, keep, "see_also")
    linked(x, away, "see_also")  # collapses into x → keep see_also
    linked(away, keep, "supersedes")  # would be keep → keep: dropped
    add_alias(bank, away, "old deploy doc")
    return keep, away


def test_merge_and_revert_through_the_admin(admin_client, bank, merge_case):
    keep, away = merge_case
    before = snapshot(bank)
    url = reverse("admin:kb_entry_changelist")
    action = {"action": "merge_selected", "_selected_action": [str(keep.pk), str(away.pk)]}

    page = admin_client.post(url, action)
    assert page.status_code == 200
    assert page.templates[0].name == "admin/graph/entry/merge_confirmation.html"
    assert page.context["keep"] == keep  # the older entry is kept unless the curator swaps
    swapped = admin_client.post(url, {**action, "keep": str(keep.pk), "preview_keep": away.pk})
    assert swapped.context["keep"] == away and swapped.context["away"] == keep
    preview = page.context["preview"]
    assert preview.counts() == {
        "edges_repointed": 2,
        "edges_collapsed": 1,
        "aliases_added": 4,  # its alias, its short_id, key and title
        "self_loops_dropped": [preview.self_loops[0].edge.pk],
    }
    body = page.content.decode()
    for text in ("re-pointed", "collapses into existing edge", "self-loop", "old deploy doc"):
        assert text in body
    assert Entry.objects.get(pk=away.pk).status == "live"  # the preview wrote nothing

    done = admin_client.post(
        url, {**action, "keep": str(keep.pk), "confirm": "yes", "reason": "same doc"}, follow=True
    )
    assert any("Merged" in m for m in messages_of(done))
    away.refresh_from_db()
    assert away.status == "merged" and away.merged_into_id == keep.pk
    found = admin_client.get(
        reverse("admin:autocomplete"),
        {"term": "runbook", "app_label": "graph", "model_name": "edge", "field_name": "to_entry"},
    ).json()["results"]
    assert [r["id"] for r in found] == [str(keep.pk)]  # a merged entry is no edge end
    merge = Operation.objects.get(bank=bank, kind=OperationKind.MERGE)
    assert merge.reason == "same doc" and merge.actor == "staff:admin"
    assert {k: merge.details[k] for k in preview.counts()} == preview.counts()

    revert_url = reverse("admin:kb_operation_revert", args=[merge.pk])
    change_page = admin_client.get(reverse("admin:kb_operation_change", args=[merge.pk]))
    assert revert_url in change_page.content.decode()
    confirm = admin_client.get(revert_url)
    assert confirm.status_code == 200
    assert confirm.context["conflicts"] == []
    models = {c["model"] for c in confirm.context["changes"]}
    assert models == {"entry", "edge", "alias"}
    assert away.short_id in confirm.content.decode()

    reverted = admin_client.post(revert_url, {"reason": "wrong merge"})
    assert reverted.status_code == 302
    merge.refresh_from_db()
    assert merge.reverted_by.kind == OperationKind.REVERT
    assert reverted.url == reverse("admin:kb_operation_change", args=[merge.reverted_by_id])
    assert snapshot(bank) == before

    again = admin_client.post(revert_url, {"reason": "twice"})
    assert again.status_code == 200
    assert any("already reverted" in m for m in messages_of(again))


def test_merge_action_needs_exactly_two(admin_client, merge_case):
    keep, _away = merge_case
    response = admin_client.post(
        reverse("admin:kb_entry_changelist"),
        {"action": "merge_selected", "_selected_action": [str(keep.pk)]},
        follow=True,
    )
    assert any("exactly two" in m for m in messages_of(response))


def test_preview_equals_what_the_merge_did(bank, make_entry, linked):
    keep, away = make_entry("Keep"), make_entry("Away", key="away")
    x, y, z = make_entry("X"), make_entry("Y"), make_entry("Z")
    linked(x, away, "cites")
    linked(away, y, "see_also", valid_from="2022-01-01")
    linked(keep, y, "see_also", valid_from="2020-01-01", valid_to="2021-01-01")  # no overlap
    linked(z, keep, "requires", valid_from="2020-01-01")
    linked(z, away, "requires", valid_to="2030-01-01")  # overlaps: collapses
    linked(keep, away, "cites")  # self-loop
    linked(away, keep, "see_also")  # self-loop
    closed = linked(away, z, "corrects")
    unlink(bank, closed.pk, "wrong")  # not believed: untouched
    add_alias(bank, away, "the away one")
    add_alias(bank, keep, away.short_id.upper())  # keep already has away's short_id: not added

    preview = plan_merge(keep, away)
    result = merge_entries(bank, keep.short_id, away.short_id, "dupe")

    assert {k: v for k, v in result.as_json().items() if k in preview.counts()} == preview.counts()
    assert preview.aliases_new == ["away"]  # key "away"; title "Away" normalises the same
    for fate in preview.edges:
        edge = Edge.objects.get(pk=fate.edge.pk)
        assert edge.invalidated_at is not None
        successor = Edge.objects.filter(replaces=edge).first()
        if fate.fate == "repointed":
            assert (successor.from_entry_id, successor.to_entry_id, successor.type_id) == (
                fate.new_from.pk,
                fate.new_to.pk,
                edge.type_id,
            )
        else:
            assert successor is None
        if fate.fate == "collapses":
            assert Edge.objects.get(pk=fate.into.pk).invalidated_at is None
    assert sorted(f.edge.pk for f in preview.edges) == sorted(
        Edge.objects.filter(bank=bank, invalidated_reason__startswith="merge of").values_list(
            "pk", flat=True
        )
    )
    assert set(
        Alias.objects.filter(bank=bank, source="merge").values_list("surface", flat=True)
    ) == set(preview.aliases_new)
    assert (
        all(Alias.objects.get(pk=a.pk).entry_id == keep.pk for a in preview.aliases_moved)
        and len(preview.aliases_moved) == 1
    )


# --- merge proposals --------------------------------------------------------------------------


def test_proposal_page_side_by_side_and_approve_runs_the_merge(admin_client, bank, merge_case):
    keep, away = merge_case
    proposal = MergeProposal.objects.create(bank=bank, keep=keep, away=away, score=0.91)
    url = reverse("admin:graph_mergeproposal_change", args=[proposal.pk])

    page = admin_client.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    assert keep.title in body and away.title in body and "runbook:deploy" in body
    assert [side["role"] for side in page.context["pair"]] == ["keep", "away"]
    assert len(page.context["pair"][1]["edges"]) == 4
    assert page.context["can_decide"]

    decide = reverse("admin:graph_mergeproposal_decide", args=[proposal.pk])
    response = admin_client.post(decide, {"decision": "approve"})
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == "approved" and proposal.decided_by == "staff:admin"
    assert proposal.decided_at is not None
    assert proposal.operation.kind == OperationKind.MERGE
    assert proposal.operation.reason == f"approved proposal #{proposal.pk}"
    away.refresh_from_db()
    assert away.status == "merged" and away.merged_into_id == keep.pk

    # Decided proposals stay decided.
    admin_client.post(decide, {"decision": "reject"})
    assert MergeProposal.objects.get(pk=proposal.pk).status == "approved"


def test_proposal_actions_reject_and_unclear(admin_client, bank, make_entry):
    a, b, c = make_entry("A"), make_entry("B"), make_entry("C")
    first = MergeProposal.objects.create(bank=bank, keep=a, away=b, score=0.9)
    second = MergeProposal.objects.create(bank=bank, keep=a, away=c, score=0.8)
    url = reverse("admin:graph_mergeproposal_changelist")
    admin_client.post(url, {"action": "reject_selected", "_selected_action": [str(first.pk)]})
    admin_client.post(url, {"action": "mark_unclear_selected", "_selected_action": [second.pk]})
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == ("rejected", "unclear")
    assert first.decided_by == "staff:admin" and first.operation is None
    assert Entry.objects.get(pk=b.pk).status == "live"
    filtered = admin_client.get(url, {"status__exact": "unclear"})
    assert rows(filtered) == {second.pk}


# --- revert conflicts -------------------------------------------------------------------------


def test_revert_page_shows_conflicts_and_forces(admin_client, bank, make_entry, linked):
    a, b = make_entry("A"), make_entry("B")
    edge = linked(a, b)
    link_op = Operation.objects.filter(kind="link").latest("id")
    unlink(bank, edge.pk, "later change")
    url = reverse("admin:kb_operation_revert", args=[link_op.pk])

    page = admin_client.get(url)
    assert [c["id"] for c in page.context["conflicts"]] == [edge.pk]
    assert revert_plan(link_op)[1] == page.context["conflicts"]
    assert 'name="force"' in page.content.decode()

    refused = admin_client.post(url, {"reason": "undo"})
    assert refused.status_code == 200
    assert any("changed again later" in m for m in messages_of(refused))
    assert Edge.objects.filter(pk=edge.pk).exists()

    forced = admin_client.post(url, {"reason": "undo", "force": "yes"})
    assert forced.status_code == 302
    assert not Edge.objects.filter(pk=edge.pk).exists()


def test_revert_action_opens_the_confirmation(admin_client, bank, make_entry):
    make_entry("A")
    op = Operation.objects.get(bank=bank, kind="create")
    response = admin_client.post(
        reverse("admin:kb_operation_changelist"),
        {"action": "revert_selected", "_selected_action": [str(op.pk)]},
    )
    assert response.status_code == 302
    assert response.url == reverse("admin:kb_operation_revert", args=[op.pk])


# --- edge types -------------------------------------------------------------------------------


def test_core_edge_types_are_editable_only_by_superusers(client, bank):
    staff = User.objects.create_user("curator", password="x", is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label="graph"))
    client.force_login(staff)
    own = EdgeType.objects.create(bank=bank, name="blocks", inverse="blocked_by")

    core_page = client.get(reverse("admin:graph_edgetype_change", args=[core("cites").pk]))
    assert core_page.status_code == 200 and not core_page.context["has_change_permission"]
    refused = client.post(
        reverse("admin:graph_edgetype_change", args=[core("cites").pk]),
        {"name": "cites", "inverse": "renamed", "neighbor_priority": 1, "score_weight": 1},
    )
    assert refused.status_code == 403
    assert core("cites").inverse == "cited_by"

    own_page = client.get(reverse("admin:graph_edgetype_change", args=[own.pk]))
    assert own_page.context["has_change_permission"]
    add = client.post(
        reverse("admin:graph_edgetype_add"),
        {
            "name": "owns_core",
            "inverse": "",
            "fold_role": "",
            "neighbor_priority": 10,
            "score_weight": 1,
            "workflow_role": "",
            "description": "",
            "bank": "",
        },
    )
    assert add.status_code == 200 and "bank" in add.context["adminform"].form.errors
    assert not EdgeType.objects.filter(name="owns_core").exists()
    listed = client.get(reverse("admin:graph_edgetype_changelist"), {"bank__isempty": "1"})
    assert own.pk not in rows(listed) and core("cites").pk in rows(listed)


def test_alias_add_goes_through_add_alias(admin_client, bank, make_entry):
    a, b = make_entry("A"), make_entry("B")
    add_alias(bank, a, "payments")
    url = reverse("admin:graph_alias_add")
    # A form may name several entries: the second is recorded and the name becomes ambiguous,
    # once the curator has seen the other entry and said "add anyway".
    asked = admin_client.post(url, {"entry": str(b.pk), "surface": "Payments!", "_save": "Save"})
    assert asked.status_code == 200 and "already names" in asked.content.decode()
    form = {"entry": str(b.pk), "surface": "Payments!", "add_anyway": "on", "_save": "Save"}
    shared = admin_client.post(url, form)
    assert shared.status_code == 302
    assert set(
        Alias.objects.filter(bank=bank, normalized="payments").values_list("entry", flat=True)
    ) == {a.pk, b.pk}
    ok = admin_client.post(url, {"entry": str(b.pk), "surface": "billing", "_save": "Save"})
    assert ok.status_code == 302
    alias = Alias.objects.get(bank=bank, normalized="billing")
    assert alias.entry == b and alias.history.get().operation_id is not None


def test_split_through_the_admin_moves_the_chosen_edge(admin_client):
    from graph.edges import links as edge_service
    from graph.models import Edge
    from kb.models import Bank, Entry
    from kb.services.entries import clean_entry_data, create_entry

    bank = Bank.objects.create(slug="splitbank", name="Split")

    def make(title):
        return create_entry(
            bank, clean_entry_data(bank, {"title": title, "lifetime": {"durable": True}})
        )

    original, x, y = make("Settlement retries and idempotency"), make("X"), make("Y")
    stay = edge_service.link(
        bank, {"from": original.short_id, "to": x.short_id, "relation": "see_also"}
    )
    moving = edge_service.link(
        bank, {"from": y.short_id, "to": original.short_id, "relation": "cites"}
    )
    url = reverse("admin:kb_entry_changelist")
    page = admin_client.post(url, {"action": "split_selected", "_selected_action": [original.pk]})
    assert (
        page.status_code == 200
        and b"Split " in page.content
        and f"edge_{moving.pk}".encode() in page.content
    )
    response = admin_client.post(
        url,
        {
            "action": "split_selected",
            "_selected_action": [original.pk],
            "confirm": "yes",
            "parts": "SFTP retry schedule | When uploads retry.\nMsgId idempotency | How duplicates are caught.",
            f"edge_{stay.pk}": "keep",
            f"edge_{moving.pk}": "2",
            "reason": "two topics",
        },
    )
    assert response.status_code == 302
    parts = {
        e.title: e
        for e in Entry.objects.filter(
            bank=bank, title__in=["SFTP retry schedule", "MsgId idempotency"]
        )
    }
    assert len(parts) == 2
    assert (
        Edge.objects.filter(
            type__name="split_from", to_entry=original, invalidated_at__isnull=True
        ).count()
        == 2
    )
    moved = Edge.objects.get(from_entry=y, type__name="cites", invalidated_at__isnull=True)
    assert moved.to_entry == parts["MsgId idempotency"]
    assert Edge.objects.get(pk=stay.pk).invalidated_at is None


def test_community_admin_is_read_only(admin_client):
    assert admin_client.get(reverse("admin:graph_community_changelist")).status_code == 200
    assert admin_client.get(reverse("admin:graph_community_add")).status_code == 403
