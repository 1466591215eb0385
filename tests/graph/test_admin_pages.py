"""Curator pages: the history timeline, the admin home, the landing page, bank-scoped pickers
and the "Propose merges" action."""

from __future__ import annotations

import pytest
from django.urls import reverse

from graph.curation.merge import merge_entries
from graph.edges.links import link
from graph.models import EdgeType
from graph.resolution.aliases import add_alias
from kb.models import Bank, EntryKind, Job

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def test_history_is_one_timeline_in_words(admin_client, bank, make_entry):
    keep, away, other = make_entry("Deploy guide"), make_entry("Old deploy doc"), make_entry("CI")
    link(bank, {"from": away.short_id, "to": other.short_id, "relation": "cites"})
    add_alias(bank, away, "deploy howto")
    merge_entries(bank, keep.short_id, away.short_id, "same document", actor="staff:ann")

    page = admin_client.get(reverse("admin:kb_entry_history", args=[keep.pk]))
    assert page.status_code == 200
    body = page.content.decode()
    merge = next(g for g in page.context["timeline"] if g.kind == "merge")
    texts = [c.text for c in merge.changes]
    # The merge's edge and alias rows belong to the survivor's story, named by titles.
    assert any(t.startswith("Linked “Deploy guide”") and "—cites→ “CI”" in t for t in texts)
    assert any("Moved alias “deploy howto” from “Old deploy doc”" in t for t in texts)
    assert any("status live → merged (into “Deploy guide”" in t for t in texts)
    assert merge.actor == "staff:ann" and merge.reason == "same document"
    for bad in ("Changed by: None", "HISTORY_ACTOR", "pk=None", "history_actor"):
        assert bad not in body
    assert "same document" in body and "staff:ann" in body


def test_admin_home_lists_banks_with_counts_and_links(admin_client, bank, make_entry):
    a, b = make_entry("A"), make_entry("B")
    link(bank, {"from": a.short_id, "to": b.short_id, "relation": "cites"})
    page = admin_client.get(reverse("admin:index"))
    assert page.status_code == 200
    body = page.content.decode()
    assert 'id="bank-overview"' in body
    for url in (
        reverse("graph-stats-page", args=[bank.slug]),
        reverse("workflows:bank", args=[bank.slug]),
        reverse("admin:graph_mergeproposal_changelist"),
        reverse("admin:kb_operation_changelist") + f"?bank__id__exact={bank.pk}",
        f"/explorer/{bank.slug}/",
    ):
        assert url in body, url
    from graph.admin.banks import bank_overview

    row = next(r for r in bank_overview([bank]) if r.bank == bank)
    assert (row.entries, row.edges, row.open_proposals) == (2, 1, 0)


def test_landing_page_leads_somewhere(client, admin_client, bank):
    anonymous = client.get("/")
    assert anonymous.status_code == 200
    assert reverse("admin:index") in anonymous.content.decode()
    assert "/explorer/acme/" not in anonymous.content.decode()  # no bank names for strangers
    assert reverse("bank-switch") not in anonymous.content.decode()
    staff = admin_client.get("/").content.decode()
    # One search box (with the slugs as suggestions), not a link per bank.
    assert reverse("bank-switch") in staff and '<option value="acme">' in staff
    jump = admin_client.get(reverse("bank-switch"), {"q": "acme", "to": "explorer"})
    assert jump.status_code == 302 and jump["Location"] == "/explorer/acme/"


def test_entry_pickers_are_scoped_to_the_entrys_bank(admin_client, bank, make_entry):
    other = Bank.objects.create(slug="other", name="Other")
    mine = make_entry("Platform team")
    make_entry("Platform team", in_bank=other)
    own_type = EdgeType.objects.create(bank=bank, name="escalates_to")
    foreign_type = EdgeType.objects.create(bank=other, name="pays_for")

    page = admin_client.get(reverse("admin:kb_entry_change", args=[mine.pk]))
    assert page.status_code == 200
    body = page.content.decode()
    assert f"autocomplete/?bank={bank.pk}" in body
    formset = next(
        f for f in page.context["inline_admin_formsets"] if f.formset.prefix == "edges_out"
    )
    types = set(formset.formset.forms[0].fields["type"].queryset)
    assert own_type in types and foreign_type not in types
    assert EdgeType.objects.get(bank=None, name="cites") in types

    found = admin_client.get(
        reverse("admin:autocomplete"),
        {
            "term": "Platform",
            "app_label": "graph",
            "model_name": "edge",
            "field_name": "to_entry",
            "bank": str(bank.pk),
        },
    ).json()["results"]
    assert [r["id"] for r in found] == [str(mine.pk)]
    assert "Platform team" in found[0]["text"] and "fact" in found[0]["text"]


def test_propose_merges_action_enqueues_the_job(
    admin_client, bank, make_entry, monkeypatch, django_capture_on_commit_callbacks
):
    queued = []
    from graph import tasks

    monkeypatch.setattr(
        tasks.propose_merges_task, "delay", lambda pk, **kw: queued.append((pk, kw))
    )
    make_entry("A")
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:kb_bank_changelist"),
            {"action": "propose_merges", "_selected_action": [str(bank.pk)]},
            follow=True,
        )
    assert response.status_code == 200
    job = Job.objects.get(bank=bank, kind="merge_proposals")  # QueueMergeProposals' job
    assert queued == [(bank.pk, {"limit": 200, "job_id": job.pk})]
    assert job.status == "queued" and job.actor.startswith("staff:")
    assert any("Queued the duplicate finder" in str(m) for m in response.context["messages"])


def test_kind_vocabulary_still_per_bank(admin_client, bank):
    # The entry add form lists kinds; a kind of another bank is refused by the service.
    other = Bank.objects.create(slug="b2", name="B2")
    EntryKind.objects.create(bank=other, name="runbook")
    assert admin_client.get(reverse("admin:kb_entry_add")).status_code == 200


def test_split_errors_speak_the_pages_numbering_and_keep_the_choices(
    admin_client, bank, make_entry
):
    entry, other = make_entry("Billing FAQ"), make_entry("Refunds")
    edge = link(bank, {"from": entry.short_id, "to": other.short_id, "relation": "cites"})
    response = admin_client.post(
        reverse("admin:kb_entry_changelist"),
        {
            "action": "split_selected",
            "_selected_action": [str(entry.pk)],
            "confirm": "yes",
            "parts": "Refund rules | When money goes back.",
            f"edge_{edge.pk}": "2",  # there is only one part
            "reason": "two topics",
        },
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert f"edge #{edge.pk}: choose keep or a part from 1 to 1" in body
    assert "from 0 to 0" not in body
    assert '<option value="2" selected>' in body  # the curator's choice survives the error
    assert "Refund rules | When money goes back." in body
