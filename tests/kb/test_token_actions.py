"""Token create, expiry and revoke as actions without a bank: the admin, the commands and a
direct call write the same rows and the same operations (one per bank the token holds), a
refused value shows on the form and writes nothing, and an agent's token manages no tokens."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from kb.actions.base import Caller
from kb.actions.staff import execute_as
from kb.actions.tokens import CreateToken, RevokeTokens, SetTokenExpiry
from kb.errors import Forbidden
from kb.models import AgentToken, Operation, OperationKind

pytestmark = pytest.mark.django_db


def _ops(kind):
    return [
        (op.bank.slug, op.actor, op.details.get("scopes"), op.details.get("expires_at"))
        for op in Operation.objects.filter(kind=kind).select_related("bank").order_by("pk")
    ]


def _split(when):
    return {"expires_at_0": when.strftime("%Y-%m-%d"), "expires_at_1": when.strftime("%H:%M:%S")}


def test_admin_create_writes_what_the_action_writes(admin_client, admin_user, bank, other_bank):
    when = (timezone.now() + timedelta(days=3)).replace(microsecond=0)
    post = {"name": "ci", "banks": [bank.pk, other_bank.pk], "scopes": ["read", "write"]}
    response = admin_client.post(reverse("admin:kb_agenttoken_add"), {**post, **_split(when)})
    assert response.status_code == 302
    via_admin = _ops(OperationKind.CREATE_TOKEN)
    Operation.objects.all().delete()
    created = execute_as(
        Caller.for_staff(admin_user),
        CreateToken,
        None,
        body={
            "name": "ci2",
            "banks": [bank.slug, other_bank.slug],
            "scopes": ["read", "write"],
            "expires_at": when.isoformat(),
        },
    )
    assert via_admin == _ops(OperationKind.CREATE_TOKEN)
    assert len(via_admin) == 2 and via_admin[0][1] == f"staff:{admin_user.username}"
    a = AgentToken.objects.get(name="ci")
    assert (a.scopes, a.expires_at, a.created_by) == (
        created.token.scopes,
        created.token.expires_at,
        created.token.created_by,
    )
    assert set(a.banks.all()) == set(created.token.banks.all()) == {bank, other_bank}


def test_admin_refused_expiry_shows_on_the_form_and_writes_nothing(admin_client, bank):
    past = timezone.now() - timedelta(days=1)
    post = {"name": "late", "banks": [bank.pk], "scopes": ["read"], **_split(past)}
    response = admin_client.post(reverse("admin:kb_agenttoken_add"), post)
    assert response.status_code == 200
    assert "expires_at" in response.context["adminform"].form.errors
    assert not AgentToken.objects.exists() and not Operation.objects.exists()


def test_admin_expiry_change_is_one_operation_per_bank(admin_client, bank):
    created = execute_as(
        Caller.system("test", via="command"),
        CreateToken,
        None,
        body={"name": "t", "banks": [bank.slug], "scopes": ["read"]},
    )
    token = created.token
    when = timezone.now() + timedelta(days=9)
    url = reverse("admin:kb_agenttoken_change", args=[token.pk])
    assert admin_client.post(url, _split(when)).status_code == 302
    token.refresh_from_db()
    assert abs(token.expires_at - when) < timedelta(seconds=1)
    (op,) = Operation.objects.filter(kind=OperationKind.TOKEN_EXPIRY)
    assert (
        op.bank == bank and op.actor.startswith("staff:") and op.details["tokens"] == [token.prefix]
    )
    # a past expiry is refused on the field, nothing written
    response = admin_client.post(url, _split(timezone.now() - timedelta(hours=1)))
    assert response.status_code == 200
    assert "expires_at" in response.context["adminform"].form.errors
    assert Operation.objects.filter(kind=OperationKind.TOKEN_EXPIRY).count() == 1


def test_commands_run_the_token_actions(bank):
    out = io.StringIO()
    call_command("create_token", "cmd", "--bank", bank.slug, "--scopes", "read", stdout=out)
    token = AgentToken.objects.get(name="cmd")
    assert token.created_by == "command:create_token"
    assert _ops(OperationKind.CREATE_TOKEN) == [(bank.slug, "command:create_token", ["read"], None)]
    call_command("revoke_token", token.prefix, stdout=io.StringIO())
    (op,) = Operation.objects.filter(kind=OperationKind.REVOKE_TOKEN)
    assert op.actor == "command:revoke_token" and op.details["tokens"] == [token.prefix]
    assert SetTokenExpiry  # the admin's change form runs it (above)


def test_an_agent_token_manages_no_tokens(bank):
    created = execute_as(
        Caller.system("test", via="command"),
        CreateToken,
        None,
        body={"name": "agent", "banks": [bank.slug], "scopes": ["read", "write", "curate"]},
    )
    caller = Caller.for_token(created.token, via="rest")
    with pytest.raises(Forbidden):
        RevokeTokens.prepare(caller, None, body={"ids": [created.token.pk]})
    with pytest.raises(Forbidden):
        CreateToken.prepare(
            caller, None, body={"name": "x", "banks": [bank.slug], "scopes": ["read"]}
        )
    created.token.refresh_from_db()
    assert created.token.revoked_at is None


def test_admin_revoke_writes_what_the_action_writes(admin_client, admin_user, bank, other_bank):
    def make(name):
        return execute_as(
            Caller.system("test", via="command"),
            CreateToken,
            None,
            body={"name": name, "banks": [bank.slug, other_bank.slug], "scopes": ["read"]},
        ).token

    a, b = make("a"), make("b")
    admin_client.post(
        reverse("admin:kb_agenttoken_changelist"),
        {"action": "revoke", "_selected_action": [a.pk], "confirmed": "yes"},
    )
    execute_as(
        Caller.for_staff(admin_user),
        RevokeTokens,
        None,
        body={"ids": [b.pk], "reason": "admin: revoke"},
    )
    ops = Operation.objects.filter(kind=OperationKind.REVOKE_TOKEN).order_by("pk")
    shape = sorted((op.details["tokens"][0], op.bank.slug, op.actor, op.reason) for op in ops)
    staff = f"staff:{admin_user.username}"
    assert shape == sorted(
        (t.prefix, slug, staff, "admin: revoke")
        for t in (a, b)
        for slug in (bank.slug, other_bank.slug)
    )
