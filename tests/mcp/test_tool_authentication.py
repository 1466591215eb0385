"""A tool call authenticates its token once (issue 23): with no ``bank`` argument the token's
only bank is read with the token, and the action's bank check reads nothing more; with a
``bank`` the statement that authenticates the token also reads that bank, as over REST."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kb.models import Bank, Entry
from kb.services.tokens import create_token
from mcpserver.dispatch import call_tool
from mcpserver.tools import tool_specs

# call_tool closes stale connections as a server does, so no test-wide transaction.
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def _spec(name: str):
    return next(s for s in tool_specs() if s.name == name)


def _token_reads(ctx) -> list[str]:
    """The statements that look a token up by its hash (authentication)."""
    return [q["sql"] for q in ctx.captured_queries if "token_hash" in q["sql"]]


def _bank_reads(ctx) -> list[str]:
    return [
        q["sql"]
        for q in ctx.captured_queries
        if q["sql"].startswith("SELECT") and 'FROM "kb_bank"' in q["sql"]
    ]


@pytest.fixture
def one_bank_token(make_entry, bank):
    entry = make_entry("Releases ship on Tuesdays")
    token, raw = create_token("auth-agent", [bank], "read,write")
    token.last_used_at = None
    return entry, raw


def test_a_call_without_a_bank_authenticates_the_token_once(one_bank_token):
    entry, raw = one_bank_token
    spec = _spec("get_entry")
    call_tool(spec, {"id": entry.short_id}, raw)  # last_used_at written: steady state below
    with CaptureQueriesContext(connection) as ctx:
        answer = call_tool(spec, {"id": entry.short_id}, raw)
    assert not answer.is_error, answer.data
    assert answer.data["id"] == entry.short_id
    assert len(_token_reads(ctx)) == 1, _token_reads(ctx)
    # The token's banks are read once, with the bank the call acts on; the action's bank check
    # (Caller.bank) reads nothing more.
    assert len(_bank_reads(ctx)) == 1, _bank_reads(ctx)


def test_a_call_naming_its_bank_reads_token_and_bank_in_one_statement(one_bank_token, bank):
    entry, raw = one_bank_token
    spec = _spec("get_entry")
    call_tool(spec, {"bank": bank.slug, "id": entry.short_id}, raw)
    with CaptureQueriesContext(connection) as ctx:
        answer = call_tool(spec, {"bank": bank.slug, "id": entry.short_id}, raw)
    assert not answer.is_error, answer.data
    reads = _token_reads(ctx)
    assert len(reads) == 1 and "kb_agenttoken_banks" in reads[0], reads
    assert _bank_reads(ctx) == []  # the bank came with the token


def test_the_answers_without_a_bank_are_unchanged(one_bank_token, bank, other_bank):
    entry, raw = one_bank_token
    spec = _spec("get_entry")
    assert call_tool(spec, {"id": entry.short_id}, "kb_nope").status == 401
    assert call_tool(spec, {"id": entry.short_id}, "").status == 401
    _, two = create_token("two-banks", [bank, other_bank], "read")
    refused = call_tool(spec, {"id": entry.short_id}, two)
    assert refused.status == 400 and refused.error_code == "bank_required"
    assert set(refused.data["error"]["fields"]["bank"].removeprefix("Required: ").split(", ")) == {
        bank.slug,
        other_bank.slug,
    }
    assert call_tool(spec, {"bank": other_bank.slug, "id": entry.short_id}, raw).status == 404
    assert Entry.objects.filter(pk=entry.pk).exists()
    assert Bank.objects.count() >= 2
