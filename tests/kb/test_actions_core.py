"""The action core (kb.actions.base): one bank/scope check, one input check, for every caller."""

from __future__ import annotations

import pytest

from kb.actions.base import Caller
from kb.actions.entries import VerifyEntry
from kb.errors import KbError
from kb.models import Operation
from kb.services.tokens import create_token

pytestmark = pytest.mark.django_db


def token_caller(*banks, scopes="read,write"):
    token, _ = create_token("actions-core", banks, scopes)
    return Caller.for_token(token, via="mcp")


def test_a_token_reaches_only_its_banks(bank, other_bank, make_entry):
    make_entry(title="Held")
    caller = token_caller(other_bank)
    with pytest.raises(KbError) as caught:
        VerifyEntry.prepare(caller, bank.slug, ids={"id": "x"}, body={})
    assert (caught.value.code, caught.value.status) == ("bank_not_found", 404)


def test_a_missing_scope_is_refused_before_anything_is_written(bank, make_entry):
    entry = make_entry(title="Needs write")
    before = Operation.objects.count()
    with pytest.raises(KbError) as caught:
        VerifyEntry.prepare(
            token_caller(bank, scopes="read"), bank.slug, ids={"id": entry.short_id}
        )
    assert (caught.value.code, caught.value.status) == ("missing_scope", 403)
    assert Operation.objects.count() == before


@pytest.mark.parametrize("body", [{"note": 5}, {"note": "ok", "extra": 1}, ["note"]])
def test_the_declared_input_is_checked_strictly(bank, make_entry, body):
    entry = make_entry(title="Strict")
    with pytest.raises(Exception) as caught:
        VerifyEntry.prepare(token_caller(bank), bank.slug, ids={"id": entry.short_id}, body=body)
    assert getattr(caught.value, "status_code", getattr(caught.value, "status", None)) == 400


def test_run_acts_as_the_caller_and_presents_the_entry(bank, make_entry):
    entry = make_entry(title="Verified by the action")
    caller = token_caller(bank)
    answer = VerifyEntry.prepare(
        caller, bank.slug, ids={"id": entry.short_id}, body={"note": "ran it"}
    ).run()
    assert answer.status == 200 and answer.data["id"] == entry.short_id
    entry.refresh_from_db()
    assert entry.verified_by == caller.actor
    op = Operation.objects.filter(bank=bank).latest("pk")
    assert (op.actor, op.reason) == (caller.actor, "ran it")


def test_staff_and_system_callers_reach_every_bank_but_an_anonymous_rest_caller_none(bank):
    assert Caller.system().bank(bank.slug) == bank
    with pytest.raises(KbError) as caught:
        Caller.system().bank("no-such-bank")
    assert caught.value.code == "bank_not_found"
    with pytest.raises(KbError) as caught:
        Caller(actor="anonymous", via="rest").bank(bank.slug)
    assert (caught.value.code, caught.value.status) == ("bank_not_found", 404)
