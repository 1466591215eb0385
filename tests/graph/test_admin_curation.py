"""The graph admin's curation pages (merge, proposals, revert, edge types, aliases, split):
every write goes through a service."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from graph.curation.merge import merge_entries, plan_merge
from graph.curation.revert import revert_plan
from graph.edges.links import unlink
from graph.models import Alias, Edge, EdgeType, MergeProposal
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
