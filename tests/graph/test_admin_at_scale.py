"""The admin with many banks and real queues: the bank search, archiving, the merge queue's
open view, alias collisions and removal, and the entry picker's ranking."""

from __future__ import annotations

import json

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from graph.models import Alias, MergeProposal, ProposalStatus
from graph.resolution.aliases import add_alias, names_taken
from kb.banks_directory import search_banks
from kb.models import Bank, Operation, OperationKind
from kb.services.banks import set_archived

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def many_banks(db) -> list[Bank]:
    return Bank.objects.bulk_create(
        [Bank(slug=f"team-{i:03d}", name=f"Team {i:03d} notes") for i in range(120)]
    )


def test_bank_search_ranks_exact_then_prefix_and_pages(admin_client, many_banks):
    Bank.objects.create(slug="platform", name="Platform")
    Bank.objects.create(slug="data-platform", name="Data platform")
    assert [b.slug for b in search_banks("platform")] == ["platform", "data-platform"]
    home = admin_client.get(reverse("admin:index"))
    body = home.content.decode()
    assert body.count('<th scope="row">') == 25 and "page 1 of 5" in body
    found = admin_client.get(reverse("admin:index"), {"bank_q": "team-07"}).content.decode()
    assert "team-070" in found and "team-079" in found and "team-080" not in found
    many = admin_client.get(reverse("bank-switch"), {"q": "team", "to": "stats"})
    assert many.status_code == 200 and many.context["result"].total == 120
    assert reverse("graph-stats-page", args=["team-000"]) in many.content.decode()


def test_bank_filter_is_a_search_box_and_narrows_kinds(admin_client, bank, many_banks):
    page = admin_client.get(reverse("admin:kb_entry_changelist")).content.decode()
    assert 'name="bank_slug"' in page
    assert page.count("?bank__id__exact=") <= 2  # no link per bank
    chosen = admin_client.get(reverse("admin:kb_entry_changelist"), {"bank_slug": "acme"})
    spec = next(s for s in chosen.context["cl"].filter_specs if s.title == "bank")
    assert spec.value() == str(bank.pk)
    for odd in ("x", "9" * 30, "-1"):  # never a 500: no bank matches
        listed = admin_client.get(reverse("admin:kb_entry_changelist"), {"bank__id__exact": odd})
        assert listed.status_code == 200 and list(listed.context["cl"].result_list) == []


def test_archive_is_an_operation_and_hides_the_bank(admin_client, bank, many_banks):
    response = admin_client.post(
        reverse("admin:kb_bank_changelist"),
        {"action": "archive_selected", ACTION_CHECKBOX_NAME: [bank.pk]},
        follow=True,
    )
    assert "Archived 1 bank(s): acme" in response.content.decode()
    bank.refresh_from_db()
    assert bank.archived_at is not None
    assert Operation.objects.filter(bank=bank, kind=OperationKind.ARCHIVE).count() == 1
    assert "acme" not in [b.slug for b in search_banks("acme")]
    assert set_archived(bank, True) is None  # archiving twice changes nothing
    actions = admin_client.get(reverse("admin:kb_bank_changelist")).context["action_form"]
    assert "delete_selected" not in [v for v, _ in actions.fields["action"].choices]
    set_archived(bank, False)
    bank.refresh_from_db()
    assert bank.archived_at is None


def test_unclear_merge_proposals_are_in_the_open_queue(admin_client, bank, make_entry):
    a, b = make_entry("Deploy guide"), make_entry("Deployment guide")
    unclear = MergeProposal.objects.create(
        bank=bank, keep=a, away=b, score=0.8, status=ProposalStatus.UNCLEAR
    )
    queue = admin_client.get(
        reverse("admin:graph_mergeproposal_changelist"),
        {"bank__id__exact": bank.pk, "queue": "open"},
    )
    assert list(queue.context["cl"].result_list) == [unclear]
    home = admin_client.get(reverse("admin:index")).content.decode()
    assert f"bank__id__exact={bank.pk}&amp;queue=open" in home


def test_alias_that_names_another_entry_needs_confirmation(admin_client, bank, make_entry):
    team = make_entry("Platform team", kind="team")
    gotcha = make_entry("Deploys fail on Fridays")
    assert names_taken(bank, gotcha, "platform  TEAM") == [team]
    url = reverse("admin:graph_alias_add")
    refused = admin_client.post(url, {"entry": gotcha.pk, "surface": "Platform team"})
    assert refused.status_code == 200 and "already names" in refused.content.decode()
    assert not Alias.objects.filter(entry=gotcha).exists()
    admin_client.post(url, {"entry": gotcha.pk, "surface": "Platform team", "add_anyway": "on"})
    assert Alias.objects.filter(entry=gotcha, surface="Platform team").exists()
    op = Operation.objects.filter(bank=bank).latest("pk")
    assert op.kind == OperationKind.ALIAS and "Platform team" in op.reason


def test_alias_removed_from_the_entry_page(admin_client, bank, make_entry):
    entry = make_entry("Deploy pipeline")
    alias = add_alias(bank, entry, "the pipeline")
    page = admin_client.get(reverse("admin:kb_entry_change", args=[entry.pk])).content.decode()
    remove = reverse("admin:graph_alias_delete", args=[alias.pk])
    assert remove in page
    back = reverse("admin:kb_entry_change", args=[entry.pk])
    done = admin_client.post(f"{remove}?next={back}", {"post": "yes"})
    assert done.status_code == 302 and done["Location"] == back
    assert not Alias.objects.filter(pk=alias.pk).exists()
    assert Operation.objects.filter(bank=bank).latest("pk").kind == OperationKind.UNALIAS


def test_entry_picker_ranks_exact_then_prefix_then_words(admin_client, bank, make_entry):
    make_entry("ADR-0003: move the platform to Kubernetes")
    make_entry("Deploy platform checklist")
    team = make_entry("Platform team", kind="team")
    prefix = make_entry("Platform migration notes")
    aliased = make_entry("Site reliability group")
    add_alias(bank, aliased, "platform")
    params = {
        "term": "platform",
        "app_label": "graph",
        "model_name": "edge",
        "field_name": "to_entry",
        "bank": bank.pk,
    }
    answer = json.loads(admin_client.get(reverse("admin:autocomplete"), params).content)
    texts = [r["text"] for r in answer["results"]]
    assert [t.split(" · ")[0] for t in texts] == [
        "Site reliability group",  # the exact alias
        "Platform team",  # title prefixes, shorter first
        "Platform migration notes",
        "Deploy platform checklist",  # every word somewhere in the title
        "ADR-0003: move the platform to Kubernetes",
    ]
    assert texts[1] == f"Platform team · team · acme · {team.short_id}"  # kind and bank shown
    assert prefix.short_id in texts[2]


def test_operations_list_words_and_affected_entries(admin_client, bank, make_entry):
    a, b = make_entry("Deploy pipeline"), make_entry("Platform team")
    from graph.edges.links import link

    link(bank, {"from": a.short_id, "to": b.short_id, "relation": "owned_by"})
    add_alias(bank, a, "the pipeline")
    listing = admin_client.get(reverse("admin:kb_operation_changelist"))
    rows = {op.kind: op for op in listing.context["cl"].result_list}
    admin = listing.context["cl"].model_admin
    assert admin.affected(rows["link"]) == ", ".join(sorted([a.short_id, b.short_id]))
    assert admin.affected(rows["alias"]) == a.short_id
    assert "alias “the pipeline” added to" in rows["alias"].reason
    page = admin_client.get(reverse("admin:kb_operation_change", args=[rows["link"].pk]))
    body = page.content.decode()
    assert body.index("What it did, in words") < body.index("Details (as stored)")
