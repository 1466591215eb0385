"""Claims (API.md "Claims"): atomic claim, renewal, release, expiry without a cron, audit."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from kb.errors import Conflict, InvalidInput
from kb.models import Bank, Claim, Operation
from kb.services import claims
from kb.services.tokens import create_token


def test_claim_then_other_holder_is_told_who_holds_it(bank):
    first = claims.claim(bank, "Migrate reports", "agent:a", ttl_seconds=600, note="on it")
    assert first.created
    with pytest.raises(Conflict) as refused:
        claims.claim(bank, "  migrate   REPORTS ", "agent:b")
    assert refused.value.code == "claim_held"
    assert refused.value.fields["holder"] == "agent:a"
    assert refused.value.fields["since"] == first.claim.since.isoformat()
    assert refused.value.fields["expires_at"] == first.claim.expires_at.isoformat()


def test_same_holder_renews_and_keeps_the_row(bank):
    first = claims.claim(bank, "x", "agent:a", ttl_seconds=60)
    again = claims.claim(bank, "x", "agent:a", ttl_seconds=3600, note="still on it")
    assert not again.created
    assert again.claim.pk == first.claim.pk
    assert again.claim.expires_at > first.claim.expires_at
    assert again.claim.note == "still on it"
    assert Claim.objects.filter(bank=bank).count() == 1


def test_expired_claim_never_blocks(bank):
    old = claims.claim(bank, "x", "agent:a", ttl_seconds=60).claim
    Claim.objects.filter(pk=old.pk).update(
        since=timezone.now() - dt.timedelta(hours=2),
        expires_at=timezone.now() - dt.timedelta(hours=1),
    )
    assert claims.live_claims(bank) == []
    new = claims.claim(bank, "x", "agent:b")
    assert new.created and new.claim.holder == "agent:b"
    old.refresh_from_db()
    assert old.released_by == claims.EXPIRED and old.released_at is not None


def test_release_then_another_may_claim_and_audit_rows(bank):
    held = claims.claim(bank, "x", "agent:a", actor="agent:a").claim
    claims.release(bank, held.pk, actor="agent:a", reason="done")
    assert claims.claim(bank, "x", "agent:b", actor="agent:b").created
    kinds = list(Operation.objects.filter(bank=bank).order_by("id").values_list("kind", "actor"))
    assert kinds == [("claim", "agent:a"), ("release", "agent:a"), ("claim", "agent:b")]
    # releasing twice changes nothing
    again = claims.release(bank, held.pk, actor="agent:a")
    assert again.released_by == "agent:a"
    assert Operation.objects.filter(bank=bank, kind="release").count() == 1


def test_entry_id_and_key_name_one_subject(bank, make_entry):
    entry = make_entry("Reports service", key="service:reports")
    claims.claim(bank, entry.short_id, "agent:a")
    with pytest.raises(Conflict):
        claims.claim(bank, "service:reports", "agent:b")
    assert [c.entry_id for c in claims.live_claims(bank, entries=[entry])] == [entry.pk]


def test_claims_are_per_bank(bank, other_bank):
    claims.claim(bank, "x", "agent:a")
    assert claims.claim(other_bank, "x", "agent:b").created


@pytest.mark.parametrize(
    "kwargs",
    [
        {"subject": "", "holder": "a"},
        {"subject": "x", "holder": ""},
        {"subject": 5, "holder": "a"},
        {"subject": "x", "holder": "a", "ttl_seconds": 0},
        {"subject": "x", "holder": "a", "ttl_seconds": "60"},
        {"subject": "x" * 501, "holder": "a"},
    ],
)
def test_bad_input_is_refused_and_nothing_written(bank, kwargs):
    with pytest.raises(InvalidInput):
        claims.claim(bank, kwargs.pop("subject"), kwargs.pop("holder"), **kwargs)
    assert not Claim.objects.exists()


def test_rest_claim_renew_conflict_list_release(bank, token_client):
    a = token_client(bank)
    url = f"/api/v1/banks/{bank.slug}/claims"
    made = a.post(url, {"subject": "fix login", "holder": "a", "note": "n"}, format="json")
    assert made.status_code == 201, made.json()
    body = made.json()
    assert set(body) >= {"id", "subject", "holder", "since", "expires_at", "note"}
    renewed = a.post(url, {"subject": "fix login", "holder": "a"}, format="json")
    assert renewed.status_code == 200 and renewed.json()["id"] == body["id"]
    held = a.post(url, {"subject": "Fix Login", "holder": "b"}, format="json")
    assert held.status_code == 409
    error = held.json()["error"]
    assert error["code"] == "claim_held"
    assert error["fields"]["holder"] == "a" and error["fields"]["since"] == body["since"]
    listed = a.get(url, {"subject": "fix login"}).json()["results"]
    assert [c["id"] for c in listed] == [body["id"]]
    released = a.post(f"{url}/{body['id']}/release", {"reason": "done"}, format="json")
    assert released.status_code == 200 and released.json()["released_at"]
    assert a.get(url).json()["results"] == []


def test_rest_scopes_and_tenancy(bank, other_bank, token_client):
    reader = token_client(bank, scopes="read")
    url = f"/api/v1/banks/{bank.slug}/claims"
    refused = reader.post(url, {"subject": "x", "holder": "a"}, format="json")
    assert refused.status_code == 403
    assert reader.get(url).status_code == 200
    other = token_client(other_bank)
    assert other.post(url, {"subject": "x", "holder": "a"}, format="json").status_code == 404
    assert other.post(f"{url}/1/release", {}, format="json").status_code == 404
    writer = token_client(bank)
    for body in (
        {"subject": "x", "holder": "a", "ttl_seconds": True},
        {"subject": "x", "zz": 1},
        [],
    ):
        response = writer.post(url, body, format="json")
        assert response.status_code == 400, body
    malformed = writer.post(f"{url}/abc/release", {}, format="json")
    assert malformed.status_code == 400 and malformed.json()["error"]["code"] == "invalid_id"
    assert writer.post(f"{url}/99999/release", {}, format="json").json()["error"]["code"] == (
        "claim_not_found"
    )


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_sixteen_concurrent_claims_one_winner():
    bank = Bank.objects.create(slug="race", name="Race")
    _, raw = create_token("racer", [bank], "read,write")
    start = threading.Barrier(16)
    answers: list[tuple[int, dict]] = [None] * 16

    def claim(i: int) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        try:
            start.wait()
            response = client.post(
                "/api/v1/banks/race/claims",
                {"subject": "the one job", "holder": f"agent-{i}"},
                format="json",
            )
            answers[i] = (response.status_code, response.json())
        finally:
            connection.close()

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    statuses = sorted(status for status, _ in answers)
    assert statuses == [201] + [409] * 15
    winner = next(body for status, body in answers if status == 201)
    for status, body in answers:
        if status == 409:
            assert body["error"]["code"] == "claim_held"
            assert body["error"]["fields"]["holder"] == winner["holder"]
            assert body["error"]["fields"]["since"] == winner["since"]
    assert Claim.objects.filter(bank=bank, released_at__isnull=True).count() == 1
    assert Operation.objects.filter(bank=bank, kind="claim").count() == 1


def test_admin_lists_live_claims_and_releases_through_the_service(bank, admin_client):
    live = claims.claim(bank, "rotate keys", "agent:a", note="half done").claim
    ended = claims.claim(bank, "old job", "agent:b", actor="agent:b").claim
    claims.release(bank, ended.pk, actor="agent:b")
    page = admin_client.get("/admin/kb/claim/")
    assert page.status_code == 200
    assert "rotate keys" in page.content.decode() and "old job" not in page.content.decode()
    everything = admin_client.get("/admin/kb/claim/?state=all").content.decode()
    assert "old job" in everything
    response = admin_client.post(
        "/admin/kb/claim/",
        {"action": "release_selected", "_selected_action": [live.pk]},
        follow=True,
    )
    assert response.status_code == 200
    live.refresh_from_db()
    assert live.released_at is not None and live.released_by.startswith("staff:")
    audited = Operation.objects.get(bank=bank, kind="release", actor=live.released_by)
    assert audited.details["on_behalf_of"] == live.created_by  # staff act as curators


def test_another_token_cannot_renew_or_release_with_the_same_holder(bank, token_client):
    """Issue 22: the holder is a label; the claim belongs to the token that made it."""
    url = f"/api/v1/banks/{bank.slug}/claims"
    owner, intruder = token_client(bank, scopes="read,write"), token_client(bank, scopes="write")
    made = owner.post(url, {"subject": "fix login", "holder": "agent-A"}, format="json").json()
    renew = intruder.post(url, {"subject": "fix login", "holder": "agent-A"}, format="json")
    assert renew.status_code == 403
    assert renew.json()["error"]["code"] == "claim_not_yours"
    release = intruder.post(f"{url}/{made['id']}/release", {}, format="json")
    assert release.status_code == 403
    assert release.json()["error"]["code"] == "claim_not_yours"
    held = Claim.objects.get(pk=made["id"])
    assert held.released_at is None and held.renewed_at is None
    assert held.token_id is not None
    # the owner still renews and releases its own claim
    again = owner.post(url, {"subject": "fix login", "holder": "agent-A"}, format="json")
    assert again.status_code == 200
    done = owner.post(f"{url}/{made['id']}/release", {}, format="json")
    assert done.status_code == 200 and done.json()["released_at"]


def test_curator_token_releases_anothers_claim_and_it_is_audited(bank, token_client):
    url = f"/api/v1/banks/{bank.slug}/claims"
    owner, curator = token_client(bank, scopes="write"), token_client(bank)
    made = owner.post(url, {"subject": "x", "holder": "a"}, format="json").json()
    renewed = curator.post(url, {"subject": "x", "holder": "a"}, format="json")
    assert renewed.status_code == 200
    released = curator.post(f"{url}/{made['id']}/release", {"reason": "stale"}, format="json")
    assert released.status_code == 200
    ops = Operation.objects.filter(bank=bank, kind__in=["claim", "release"]).order_by("id")
    renew_op, release_op = list(ops)[1:]
    assert renew_op.details["on_behalf_of"] == "agent:test-agent"
    assert release_op.details["on_behalf_of"] == "agent:test-agent"
    assert release_op.details["claim_token"] == Claim.objects.get(pk=made["id"]).token_id
    assert "released agent:test-agent's claim: stale" in release_op.reason


def test_service_caller_identity_decides_not_holder(bank):
    mine = claims.ClaimCaller(actor="agent:a", token_id=None)
    held = claims.claim(bank, "x", "label", caller=mine).claim
    with pytest.raises(claims.Forbidden) as refused:
        claims.claim(bank, "x", "label", caller=claims.ClaimCaller(actor="agent:b"))
    assert refused.value.code == "claim_not_yours" and refused.value.status == 403
    with pytest.raises(claims.Forbidden):
        claims.release(bank, held.pk, caller=claims.ClaimCaller(actor="agent:b"))
    staff = claims.ClaimCaller(actor="staff:root", curator=True)
    assert claims.release(bank, held.pk, caller=staff).released_by == "staff:root"
