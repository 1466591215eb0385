"""Token lifecycle and abuse limits: expiry, revocation (service, command, admin action),
last-used time at most once a minute, per-token rate limits shared through PostgreSQL, and
OPTIONS/HEAD on a foreign bank."""

from __future__ import annotations

import io
import threading
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from kb.models import AgentToken, TokenRateWindow
from kb.services import ratelimit
from kb.services.tokens import authenticate_token, create_token, revoke_tokens, token_state

pytestmark = pytest.mark.django_db


def client_for(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def stale(bank_slug="acme"):
    return f"/api/v1/banks/{bank_slug}/stale"


def test_an_expired_token_stops_working(bank):
    token, raw = create_token(
        "short-lived", [bank], "read", expires_at=timezone.now() + timedelta(hours=1)
    )
    assert client_for(raw).get(stale()).status_code == 200
    AgentToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = client_for(raw).get(stale())
    assert response.status_code == 401 and response.json()["error"]["code"] == "not_authenticated"
    token.refresh_from_db()
    assert token_state(token) == "expired"


def test_an_expiry_in_the_past_is_refused(bank):
    from kb.errors import InvalidInput

    with pytest.raises(InvalidInput):
        create_token("late", [bank], "read", expires_at=timezone.now() - timedelta(minutes=1))


def test_revoke_stops_a_token_at_once_and_keeps_the_row(bank):
    token, raw = create_token("agent", [bank], "read")
    assert authenticate_token(raw) is not None
    result = revoke_tokens([token], actor="staff:alice")
    assert result.revoked == [token.prefix] and result.already == []
    assert authenticate_token(raw) is None
    assert client_for(raw).get(stale()).status_code == 401
    again = revoke_tokens([token])
    assert again.revoked == [] and again.already == [token.prefix]
    token.refresh_from_db()
    assert token.revoked_at is not None and token_state(token) == "revoked"


def test_revoking_writes_one_audit_row_per_bank_and_cannot_be_reverted(bank, other_bank):
    from graph.curation.revert import revert_operation
    from kb.errors import Conflict
    from kb.models import Operation, OperationKind

    both, _ = create_token("both", [bank, other_bank], "read")
    one, _ = create_token("one", [bank], "read")
    revoke_tokens([both, one], actor="staff:alice", reason="laptop lost")
    ops = {op.bank_id: op for op in Operation.objects.filter(kind=OperationKind.REVOKE_TOKEN)}
    assert set(ops) == {bank.pk, other_bank.pk}
    assert sorted(ops[bank.pk].details["tokens"]) == sorted([both.prefix, one.prefix])
    assert ops[other_bank.pk].details == {"tokens": [both.prefix]}
    assert {op.actor for op in ops.values()} == {"staff:alice"}
    assert {op.reason for op in ops.values()} == {"laptop lost"}
    revoke_tokens([both])  # already revoked: nothing new to record
    assert Operation.objects.filter(kind=OperationKind.REVOKE_TOKEN).count() == 2
    with pytest.raises(Conflict) as refused:
        revert_operation(bank, ops[bank.pk].pk, "undo")
    assert refused.value.code == "not_revertible"
    both.refresh_from_db()
    assert both.revoked_at is not None


def test_revoke_token_command_by_prefix_raw_value_and_name(bank):
    one, raw_one = create_token("one", [bank], "read")
    two, _ = create_token("two", [bank], "read")
    three, _ = create_token("three", [bank], "read")
    out = io.StringIO()
    call_command("revoke_token", raw_one, two.prefix, stdout=out)
    assert "Revoked 2 token(s)" in out.getvalue()
    call_command("revoke_token", "--name", "three", stdout=io.StringIO())
    states = {t.name: token_state(t) for t in AgentToken.objects.all()}
    assert states == {"one": "revoked", "two": "revoked", "three": "revoked"}


def test_create_token_command_with_expiry(bank):
    out = io.StringIO()
    call_command("create_token", "temp", "--bank", bank.slug, "--expires-in-days", "2", stdout=out)
    token = AgentToken.objects.get(name="temp")
    assert timedelta(days=1.9) < token.expires_at - timezone.now() < timedelta(days=2.1)
    assert out.getvalue().strip().splitlines()[-1].startswith("kb_")


def test_admin_revoke_action_and_state_filter(admin_client, bank):
    token, raw = create_token("admin-made", [bank], "read")
    response = admin_client.post(
        "/admin/kb/agenttoken/",
        {"action": "revoke", "_selected_action": [token.pk], "confirmed": "yes"},
        follow=True,
    )
    assert response.status_code == 200
    assert authenticate_token(raw) is None
    listing = admin_client.get("/admin/kb/agenttoken/?state=revoked")
    assert listing.status_code == 200 and b"admin-made" in listing.content
    assert b"admin-made" not in admin_client.get("/admin/kb/agenttoken/?state=active").content


def test_admin_add_form_sets_an_expiry(admin_client, bank):
    when = timezone.now() + timedelta(days=30)
    response = admin_client.post(
        "/admin/kb/agenttoken/add/",
        {
            "name": "with-expiry",
            "banks": [bank.pk],
            "scopes": ["read"],
            "expires_at_0": when.strftime("%Y-%m-%d"),
            "expires_at_1": when.strftime("%H:%M:%S"),
        },
        follow=True,
    )
    assert response.status_code == 200
    token = AgentToken.objects.get(name="with-expiry")
    assert token.expires_at is not None and abs(token.expires_at - when) < timedelta(seconds=2)


def test_last_used_is_written_at_most_once_a_minute(bank):
    token, raw = create_token("busy", [bank], "read")
    with CaptureQueriesContext(connection) as first:
        authenticate_token(raw)
    assert any(q["sql"].startswith("UPDATE") for q in first.captured_queries)
    with CaptureQueriesContext(connection) as second:
        for _ in range(5):
            authenticate_token(raw)
    assert not any(q["sql"].startswith("UPDATE") for q in second.captured_queries)
    AgentToken.objects.filter(pk=token.pk).update(
        last_used_at=timezone.now() - timedelta(minutes=2)
    )
    before = AgentToken.objects.get(pk=token.pk).last_used_at
    authenticate_token(raw)
    assert AgentToken.objects.get(pk=token.pk).last_used_at > before


# --- rate limits --------------------------------------------------------------------------------


def test_the_request_limit_answers_429_with_retry_after(bank, settings):
    settings.KB_RATE_LIMIT_PER_MINUTE = 3
    _, raw = create_token("chatty", [bank], "read")
    client = client_for(raw)
    statuses = [client.get(stale()).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    response = client.get(stale())
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60
    body = response.json()["error"]
    assert body["code"] == "rate_limited" and body["retry_after"] == int(response["Retry-After"])
    # Another token has a count of its own.
    _, other = create_token("quiet", [bank], "read")
    assert client_for(other).get(stale()).status_code == 200


def test_the_write_limit_counts_only_writes(bank, settings, hashing_embedder):
    settings.KB_RATE_LIMIT_PER_MINUTE = 0
    settings.KB_RATE_LIMIT_WRITES_PER_MINUTE = 2
    _, raw = create_token("writer", [bank], "read,write")
    client = client_for(raw)
    body = {
        "title": "A learning",
        "content": "Something that holds.",
        "lifetime": {"durable": True},
        "allow_duplicate": True,  # the same body twice: this test counts writes, not duplicates
    }
    url = "/api/v1/banks/acme/entries"
    assert [client.post(url, body, format="json").status_code for _ in range(2)] == [201, 201]
    refused = client.post(url, body, format="json")
    assert refused.status_code == 429 and refused["Retry-After"]
    # Reads (including a read POST such as the query) are not writes.
    assert client.get(stale()).status_code == 200


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_count_is_exact_across_concurrent_connections(settings):
    """Four threads, each with its own database connection (as separate web processes have),
    count 25 requests each at once: the shared count is exactly 100 and exactly the requests
    past the limit are refused."""
    from django.db import connections

    from kb.models import Bank

    settings.KB_RATE_LIMIT_PER_MINUTE = 90
    bank = Bank.objects.create(slug="rate", name="Rate")
    token, _ = create_token("shared", [bank], "read")
    now = 1_800_000_010.0
    refused, errors = [], []
    start = threading.Barrier(4)

    def worker():
        try:
            start.wait(10)
            for _ in range(25):
                if not ratelimit.count_request(token.pk, "all", now=now).allowed:
                    refused.append(1)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert TokenRateWindow.objects.get(token=token, bucket="all").count == 100
    assert len(refused) == 10


def test_old_windows_are_forgotten(bank, settings):
    settings.KB_RATE_LIMIT_PER_MINUTE = 100
    token, _ = create_token("old", [bank], "read")
    ratelimit.count_request(token.pk, "all", now=1_800_000_000.0)
    ratelimit.count_request(token.pk, "all", now=1_800_000_000.0 + 120)
    assert list(TokenRateWindow.objects.filter(token=token).values_list("count", flat=True)) == [1]


def test_staff_sessions_are_not_rate_limited(admin_client, bank, settings):
    settings.KB_RATE_LIMIT_PER_MINUTE = 1
    assert [admin_client.get(stale()).status_code for _ in range(3)] == [200, 200, 200]


# --- OPTIONS and HEAD on a foreign bank --------------------------------------------------------


def test_options_and_head_on_a_foreign_bank_are_404(bank, other_bank, token_client):
    client = token_client(bank)
    for path in (
        stale("globex"),
        "/api/v1/banks/globex/query",
        "/api/v1/banks/globex/entries/abcdabcd",
    ):
        options = client.options(path)
        assert options.status_code == 404, (path, options.content)
        assert options.json()["error"]["code"] == "bank_not_found"
        assert client.head(path).status_code in (404, 405)
    assert client.head(stale("globex")).status_code == 404
    # The caller's own bank still answers OPTIONS with the view's metadata.
    own = client.options(stale("acme"))
    assert own.status_code == 200 and "name" in own.json()


def _values(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_the_token_and_its_bank_are_read_as_the_orm_reads_them(bank, other_bank):
    """One prepared statement reads the token and its bank (kb.services.tokens): the same
    field values, JSON and time zones included, as the ORM's; nothing for a bank the token
    does not hold, nor for a revoked or expired token."""
    from kb.models import Bank
    from kb.services.tokens import authenticate_token_for_bank

    bank.settings = {"lexical_weight": 0.25, "nested": {"a": [1, 2]}}
    bank.save()
    token, raw = create_token(
        "reader", [bank], "read,write", expires_at=timezone.now() + timedelta(days=3)
    )
    AgentToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    found, held = authenticate_token_for_bank(raw, bank.slug)
    assert _values(found) == _values(AgentToken.objects.get(pk=token.pk))
    assert _values(held) == _values(Bank.objects.get(pk=bank.pk))
    assert held.settings["nested"] == {"a": [1, 2]} and found.scopes == ["read", "write"]
    assert found.expires_at.utcoffset() == timedelta(0)
    found, held = authenticate_token_for_bank(raw, other_bank.slug)
    assert found.pk == token.pk and held is None
    AgentToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert authenticate_token_for_bank(raw, bank.slug) == (None, None)
    AgentToken.objects.filter(pk=token.pk).update(expires_at=None, revoked_at=timezone.now())
    assert authenticate_token_for_bank(raw, bank.slug) == (None, None)
