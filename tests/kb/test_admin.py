"""The kb admin: every page renders, and every write goes through an audited path."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib import admin
from django.urls import reverse
from django.utils import timezone

from kb.models import (
    AgentToken,
    Bank,
    Entry,
    EntryEmbedding,
    EntryKind,
    Job,
    Operation,
    OperationKind,
)
from kb.services.entries import clean_entry_data, create_entry, verify_entry
from kb.services.tokens import hash_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def bank():
    return Bank.objects.create(slug="b1", name="B1")


@pytest.fixture
def entry(bank):
    return create_entry(
        bank,
        clean_entry_data(
            bank,
            {
                "title": "Deploys go through the release train",
                "content": "Every Tuesday; hotfixes need a second reviewer.",
                "kind": "fact",
                "systems": ["ci", "release"],
                "lifetime": {"durable": True},
            },
        ),
    )


def change_url(obj) -> str:
    return reverse(f"admin:kb_{obj._meta.model_name}_change", args=[obj.pk])


def entry_post_data(entry: Entry, **overrides) -> dict:
    """The change form's fields as a browser would submit them."""
    data = {
        "title": entry.title,
        "key": entry.key or "",
        "summary": entry.summary,
        "content": entry.content,
        "useful_for": entry.useful_for,
        "steps": "",
        "metadata": "{}",
        "kind": str(entry.kind_id),
        "status": entry.status,
        "systems": "\n".join(entry.systems),
        "tasks": "\n".join(entry.tasks),
        "durable": "on",
        "expires_at": "",
        "resolved_by": "",
        "retired_reason": "",
        "retired_evidence": "",
        "anchor_files": "",
        "anchor_symbols": "",
        "_save": "Save",
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_site_header():
    assert admin.site.site_header == "Knowledge Bank"


def test_registered_models():
    registry = admin.site._registry
    for model in (Bank, EntryKind, Entry, AgentToken, Operation, Job):
        assert model in registry
    assert EntryEmbedding not in registry


@pytest.mark.parametrize(
    "model",
    [Bank, EntryKind, Entry, AgentToken, Operation, Job],
    ids=lambda m: m._meta.model_name,
)
def test_changelists_render(admin_client, entry, model):
    url = reverse(f"admin:kb_{model._meta.model_name}_changelist")
    response = admin_client.get(url)
    assert response.status_code == 200


def test_changelists_show_rows(admin_client, bank, entry):
    Job.objects.create(bank=bank, kind="import", progress_done=3, progress_total=10)

    response = admin_client.get(reverse("admin:kb_bank_changelist"))
    bank_row = response.context["cl"].result_list.get(pk=bank.pk)
    assert bank_row.entry_count == 1

    response = admin_client.get(reverse("admin:kb_entry_changelist"), {"q": "release train"})
    assert list(response.context["cl"].result_list) == [entry]
    assert entry.short_id in response.content.decode()

    response = admin_client.get(reverse("admin:kb_job_changelist"))
    assert "3/10" in response.content.decode()


def test_kind_filter_core_and_bank(admin_client, bank):
    own = EntryKind.objects.create(bank=bank, name="runbook")
    url = reverse("admin:kb_entrykind_changelist")

    core = admin_client.get(url, {"bank__isempty": "1"}).context["cl"].result_list
    assert own not in core
    assert EntryKind.objects.get(bank=None, name="fact") in core

    banked = admin_client.get(url, {"bank__id__exact": str(bank.pk)}).context["cl"].result_list
    assert list(banked) == [own]
    typed = admin_client.get(url, {"bank_slug": bank.slug}).context["cl"].result_list
    assert list(typed) == [own]  # the filter's search box takes a slug


def test_kind_autocomplete_works(admin_client, entry):
    response = admin_client.get(
        reverse("admin:autocomplete"),
        {"term": "fac", "app_label": "kb", "model_name": "entry", "field_name": "kind"},
    )
    assert response.status_code == 200
    assert "fact" in [r["text"] for r in response.json()["results"]]


def test_entry_change_page_renders(admin_client, entry):
    response = admin_client.get(change_url(entry))
    assert response.status_code == 200
    body = response.content.decode()
    assert entry.short_id in body
    for legend in ("Content", "Classification", "Lifetime", "Anchors", "Clocks"):
        assert legend in body


def test_entry_edit_is_audited_and_moves_updated_at_only(admin_client, entry):
    entry = verify_entry(entry.bank, entry)
    before = Entry.objects.get(pk=entry.pk)
    history_before = before.history.count()

    response = admin_client.post(
        change_url(entry), entry_post_data(before, title="Deploys ride the train")
    )
    assert response.status_code == 302, response.context["adminform"].form.errors

    after = Entry.objects.get(pk=entry.pk)
    assert after.title == "Deploys ride the train"
    assert after.updated_at > before.updated_at
    assert after.verified_at == before.verified_at
    assert after.verified_by == before.verified_by
    assert after.short_id == before.short_id
    assert after.systems == ["ci", "release"]

    assert after.history.count() == history_before + 1
    row = after.history.latest()
    assert row.operation_id is not None
    operation = Operation.objects.get(pk=row.operation_id)
    assert operation.kind == OperationKind.UPDATE
    assert operation.reason == ""  # the edit action's operation, as REST's PATCH writes it
    assert operation.bank == entry.bank
    assert operation.actor.startswith("staff:")
    assert row.history_actor == operation.actor
    assert operation.details["entry"] == entry.short_id
    assert "title" in operation.details["fields"]


def test_entry_edit_keeps_usage_counted_meanwhile(admin_client, entry):
    stale = Entry.objects.get(pk=entry.pk)
    Entry.objects.filter(pk=entry.pk).update(usage_count=7)
    response = admin_client.post(change_url(entry), entry_post_data(stale, title="New title"))
    assert response.status_code == 302
    assert Entry.objects.get(pk=entry.pk).usage_count == 7


def test_entry_edit_rejects_two_lifetimes(admin_client, entry):
    count = Operation.objects.count()
    response = admin_client.post(change_url(entry), entry_post_data(entry, expires_at="2030-01-01"))
    assert response.status_code == 200
    assert "exactly one" in str(response.context["adminform"].form.non_field_errors())
    assert Operation.objects.count() == count
    assert Entry.objects.get(pk=entry.pk).expires_at is None


def test_entry_edit_rejects_kind_of_another_bank(admin_client, entry):
    other = Bank.objects.create(slug="b2", name="B2")
    foreign = EntryKind.objects.create(bank=other, name="runbook")
    response = admin_client.post(change_url(entry), entry_post_data(entry, kind=str(foreign.pk)))
    assert response.status_code == 200
    assert "kind" in response.context["adminform"].form.errors


def test_entry_add_through_admin_is_audited(admin_client, bank):
    fact = EntryKind.objects.get(bank=None, name="fact")
    data = {
        "title": "Added in the admin",
        "key": "",
        "summary": "",
        "content": "body",
        "useful_for": "",
        "steps": "",
        "metadata": "{}",
        "bank": str(bank.pk),
        "kind": str(fact.pk),
        "status": "live",
        "systems": "billing\n\nledger\n",
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
    response = admin_client.post(reverse("admin:kb_entry_add"), data)
    assert response.status_code == 302, response.context["adminform"].form.errors

    entry = Entry.objects.get(bank=bank, title="Added in the admin")
    assert re.fullmatch(r"[0-9a-f]{8}", entry.short_id)
    assert entry.systems == ["billing", "ledger"]
    assert entry.created_by.startswith("staff:")
    assert entry.verified_at is None
    row = entry.history.get()
    assert row.history_type == "+"
    operation = Operation.objects.get(pk=row.operation_id)
    assert operation.kind == OperationKind.CREATE
    assert operation.details == {"entry": entry.short_id}


def test_entry_revert_is_an_audited_revert(admin_client, entry):
    """Undoing an edit reverts its whole operation; the row-level history form is read-only."""
    verified = verify_entry(entry.bank, entry)
    original = entry.history.latest()
    response = admin_client.post(change_url(entry), entry_post_data(verified, title="Changed"))
    assert response.status_code == 302
    edit = Operation.objects.get(pk=Entry.objects.get(pk=entry.pk).history.latest().operation_id)

    url = reverse("admin:kb_entry_simple_history", args=[entry.pk, original.history_id])
    refused = admin_client.post(url, entry_post_data(entry, title=original.title))
    assert refused.status_code == 403
    assert Entry.objects.get(pk=entry.pk).title == "Changed"

    response = admin_client.post(
        reverse("admin:kb_operation_revert", args=[edit.pk]), {"reason": "undo the edit"}
    )
    assert response.status_code == 302
    after = Entry.objects.get(pk=entry.pk)
    assert after.title == original.title
    assert after.verified_at == verified.verified_at  # the edit never moved it
    operation = Operation.objects.get(pk=after.history.latest().operation_id)
    assert operation.kind == OperationKind.REVERT


def test_mark_verified_action(admin_client, entry):
    assert entry.verified_at is None
    response = admin_client.post(
        reverse("admin:kb_entry_changelist"),
        {"action": "mark_verified", "_selected_action": [str(entry.pk)]},
        follow=True,
    )
    assert response.status_code == 200
    assert any("verified" in m for m in messages_of(response))

    after = Entry.objects.get(pk=entry.pk)
    assert after.verified_at is not None
    assert after.verified_by.startswith("staff:")
    assert after.updated_at == entry.updated_at
    operation = Operation.objects.get(pk=after.history.latest().operation_id)
    assert operation.kind == OperationKind.VERIFY


def test_token_add_shows_raw_token_once_and_stores_only_hash(admin_client, bank):
    add_url = reverse("admin:kb_agenttoken_add")
    form_page = admin_client.get(add_url)
    assert form_page.status_code == 200
    form_fields = set(form_page.context["adminform"].form.fields)
    assert form_fields == {"name", "banks", "scopes", "expires_at"}

    response = admin_client.post(
        add_url,
        {"name": "ci-agent", "banks": [str(bank.pk)], "scopes": ["read", "write"], "_save": "Save"},
        follow=True,
    )
    assert response.status_code == 200

    token_messages = [m for m in messages_of(response) if "kb_" in m]
    assert len(token_messages) == 1
    assert "Copy it now; it is not shown again: <code" in token_messages[0]
    assert 'data-copy="kb-secret"' in token_messages[0]  # the Copy button (kb/copy.js)
    raw = re.search(r"(kb_[A-Za-z0-9_\-]+)", token_messages[0]).group(1)
    assert response.content.decode().count(raw) == 1

    token = AgentToken.objects.get()
    assert token.name == "ci-agent"
    assert sorted(token.scopes) == ["read", "write"]
    assert list(token.banks.all()) == [bank]
    assert token.token_hash == hash_token(raw)
    assert raw.startswith(f"kb_{token.prefix}_")
    for value in AgentToken.objects.values().get().values():
        assert raw not in str(value)

    # Never shown again: not on the change page, not on the list.
    assert raw not in admin_client.get(change_url(token)).content.decode()
    assert raw not in admin_client.get(reverse("admin:kb_agenttoken_changelist")).content.decode()


def test_token_add_requires_scopes_and_banks(admin_client, bank):
    response = admin_client.post(reverse("admin:kb_agenttoken_add"), {"name": "x", "_save": "Save"})
    assert response.status_code == 200
    assert {"banks", "scopes"} <= set(response.context["adminform"].form.errors)
    assert not AgentToken.objects.exists()


def test_token_change_form_cannot_revoke_or_revive(admin_client, bank):
    from kb.services.tokens import create_token, revoke_tokens

    token, _raw = create_token("bot", [bank], ["read"])
    response = admin_client.get(change_url(token))
    assert response.status_code == 200
    assert set(response.context["adminform"].form.fields) == {"expires_at"}
    body = response.content.decode()
    assert token.token_hash not in body

    revoked = timezone.now().replace(microsecond=0) - dt.timedelta(days=1)
    response = admin_client.post(
        change_url(token),
        {
            "revoked_at_0": revoked.strftime("%Y-%m-%d"),
            "revoked_at_1": revoked.strftime("%H:%M:%S"),
            "name": "renamed",
            "prefix": "deadbeef",
            "_save": "Save",
        },
    )
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is None  # revoking goes through the Revoke action only
    assert token.name == "bot"
    assert token.prefix != "deadbeef"

    revoke_tokens([token], actor="staff:alice")
    token.refresh_from_db()
    was = token.revoked_at
    response = admin_client.post(
        change_url(token), {"revoked_at_0": "", "revoked_at_1": "", "_save": "Save"}
    )
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at == was  # a revoked token stays revoked


def test_a_token_revoked_while_its_page_is_open_stays_revoked(admin_user, bank, rf):
    """The change form writes only the expiry: saving a page loaded before a revocation
    does not write the old ``revoked_at`` back."""
    from kb.admin_tokens import AgentTokenAdmin
    from kb.services.tokens import create_token, revoke_tokens

    token, _raw = create_token("bot", [bank], ["read"])
    page = AgentToken.objects.get(pk=token.pk)  # what the admin read when the page loaded
    revoke_tokens([token], actor="staff:alice")
    model_admin = AgentTokenAdmin(AgentToken, admin.site)
    request = rf.post("/")
    request.user = admin_user
    later = timezone.now() + dt.timedelta(days=30)
    form_class = model_admin.get_form(request, page, change=True)
    form = form_class(
        data={"expires_at_0": later.strftime("%Y-%m-%d"), "expires_at_1": "12:00:00"},
        instance=page,
    )
    assert form.is_valid(), form.errors
    model_admin.save_model(request, form.save(commit=False), form, change=True)
    model_admin.save_related(request, form, [], change=True)
    token.refresh_from_db()
    assert token.revoked_at is not None  # still revoked
    assert token.expires_at is not None and token.expires_at.date() == later.date()
    assert Operation.objects.filter(kind="revoke_token", bank=bank).count() == 1


def test_token_revoke_action(admin_client, bank):
    from kb.models import Operation, OperationKind
    from kb.services.tokens import create_token

    token, _raw = create_token("bot", [bank], ["read"])
    asked = admin_client.post(
        reverse("admin:kb_agenttoken_changelist"),
        {"action": "revoke", "_selected_action": [str(token.pk)]},
    )
    assert asked.status_code == 200 and "Revoke 1 token" in asked.content.decode()
    token.refresh_from_db()
    assert token.revoked_at is None  # nothing happens before the confirmation
    response = admin_client.post(
        reverse("admin:kb_agenttoken_changelist"),
        {"action": "revoke", "_selected_action": [str(token.pk)], "confirmed": "yes"},
    )
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    op = Operation.objects.get(bank=bank, kind=OperationKind.REVOKE_TOKEN)
    assert op.details == {"tokens": [token.prefix]}
    assert op.actor.startswith("staff:")


def test_operation_is_read_only(admin_client, entry):
    assert admin_client.get(reverse("admin:kb_operation_add")).status_code == 403

    operation = Operation.objects.get(kind=OperationKind.CREATE)
    response = admin_client.get(change_url(operation))
    assert response.status_code == 200
    assert not response.context["has_change_permission"]
    assert not response.context["has_delete_permission"]
    body = response.content.decode()
    assert "<table>" in body
    assert entry.short_id in body
    assert entry.title in body

    count = Operation.objects.count()
    response = admin_client.post(
        reverse("admin:kb_operation_delete", args=[operation.pk]), {"post": "yes"}
    )
    assert response.status_code == 403
    assert Operation.objects.count() == count


def test_job_is_read_only(admin_client, bank):
    job = Job.objects.create(bank=bank, kind="import")
    assert admin_client.get(reverse("admin:kb_job_add")).status_code == 403
    response = admin_client.get(change_url(job))
    assert response.status_code == 200
    assert not response.context["has_change_permission"]


@pytest.mark.parametrize("model", [Bank, EntryKind, Entry], ids=lambda m: m._meta.model_name)
def test_add_and_change_pages_render(admin_client, entry, model):
    assert admin_client.get(reverse(f"admin:kb_{model._meta.model_name}_add")).status_code == 200
    obj = {Bank: entry.bank, EntryKind: entry.kind, Entry: entry}[model]
    assert admin_client.get(change_url(obj)).status_code == 200
    assert (
        admin_client.get(
            reverse(f"admin:kb_{model._meta.model_name}_history", args=[obj.pk])
        ).status_code
        == 200
    )


def _entry(bank, title):
    return create_entry(
        bank, clean_entry_data(bank, {"title": title, "lifetime": {"durable": True}})
    )


def test_verified_filter_lists_stale_entries(admin_client, bank):
    from datetime import timedelta

    from django.utils import timezone

    never = _entry(bank, "Never verified")
    old = _entry(bank, "Verified long ago")
    fresh = _entry(bank, "Verified today")
    Entry.objects.filter(pk=old.pk).update(verified_at=timezone.now() - timedelta(days=200))
    Entry.objects.filter(pk=fresh.pk).update(verified_at=timezone.now())
    page = admin_client.get("/admin/kb/entry/", {"verified": "90"}).content.decode()
    assert never.title in page and old.title in page and fresh.title not in page
    page = admin_client.get("/admin/kb/entry/", {"verified": "never"}).content.decode()
    assert never.title in page and old.title not in page
