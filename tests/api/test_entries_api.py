"""The agent contract for entries: auth, scopes, tenancy, errors, shapes."""

import pytest
from rest_framework.test import APIClient

from kb.models import AgentToken, Entry, Operation

pytestmark = pytest.mark.django_db

LEARNING = {
    "title": "Retry payments only with idempotency keys",
    "content": "The payment provider double-charges on retries without an Idempotency-Key header.",
    "useful_for": "Changing how checkout retries failed payments.",
    "kind": "gotcha",
    "systems": ["checkout"],
    "tasks": ["retry payments"],
    "metadata": {"source": "incident 412"},
    "lifetime": {"durable": True},
    "anchors": {"files": ["src/checkout/retry.ts"], "symbols": ["retryPayment"]},
}


def url(bank, *parts):
    return "/api/v1/banks/" + "/".join([bank, *parts])


def assert_envelope(response, status, code):
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert isinstance(body["error"]["fields"], dict)
    return body["error"]


def test_report_learning_then_read_it(client_rw, bank):
    response = client_rw.post(url("acme", "entries"), LEARNING, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert len(body["id"]) == 8
    for name in (
        "title",
        "content",
        "useful_for",
        "kind",
        "systems",
        "tasks",
        "metadata",
        "lifetime",
        "anchors",
    ):
        assert body[name] == LEARNING[name]
    assert body["status"] == "live" and body["edges"] == [] and body["aliases"] == []
    assert body["verified_at"] is None and body["created_at"] and body["updated_at"]
    again = client_rw.get(url("acme", "entries", body["id"]))
    assert again.status_code == 200
    assert again.json()["title"] == LEARNING["title"]
    entry = Entry.objects.get(bank=bank, short_id=body["id"])
    assert entry.created_by == "agent:test-agent"
    assert Operation.objects.filter(bank=bank, kind="create", actor="agent:test-agent").count() == 1


def test_get_by_key(client_rw, make_entry):
    entry = make_entry("Reports service", key="service:reports")
    response = client_rw.get(url("acme", "entries", "service:reports"))
    assert response.status_code == 200 and response.json()["id"] == entry.short_id


def test_patch_moves_updated_at_not_verified_at(client_rw, make_entry):
    entry = make_entry("Old title")
    response = client_rw.patch(
        url("acme", "entries", entry.short_id), {"title": "New title"}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["title"] == "New title"
    assert body["updated_at"] > entry.updated_at.isoformat()
    assert body["verified_at"] is None
    verified = client_rw.post(url("acme", "entries", entry.short_id, "verify"), {}, format="json")
    assert verified.status_code == 200 and verified.json()["verified_at"] is not None
    assert verified.json()["updated_at"] == body["updated_at"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**LEARNING, "title": ""}, "title"),
        ({**LEARNING, "kind": "nonsense"}, "kind"),
        ({**LEARNING, "lifetime": {"durable": True, "expires_at": "2030-01-01"}}, "lifetime"),
        ({**LEARNING, "lifetime": {"expires_at": "next tuesday"}}, "lifetime"),
        ({**LEARNING, "lifetime": {"resolved_by": "ffffffff"}}, "lifetime"),
        ({k: v for k, v in LEARNING.items() if k != "lifetime"}, "lifetime"),
        ({**LEARNING, "systems": "checkout"}, "systems"),
        ({**LEARNING, "metadata": [1, 2]}, "metadata"),
        ({**LEARNING, "surprise": 1}, "surprise"),
    ],
)
def test_bad_fields_answer_400_with_fields(client_rw, body, field):
    error = assert_envelope(
        client_rw.post(url("acme", "entries"), body, format="json"), 400, "invalid_entry"
    )
    assert field in error["fields"]
    assert Entry.objects.count() == 0


def test_bad_json_answers_400(client_rw):
    response = client_rw.post(
        url("acme", "entries"), data="{not json", content_type="application/json"
    )
    assert_envelope(response, 400, "bad_json")


def test_non_object_body_answers_400(client_rw):
    response = client_rw.post(
        url("acme", "entries"), data="[1, 2]", content_type="application/json"
    )
    assert_envelope(response, 400, "invalid_body")


def test_duplicate_key_answers_409(client_rw, make_entry):
    make_entry("Existing", key="service:reports")
    response = client_rw.post(
        url("acme", "entries"), {**LEARNING, "key": "service:reports"}, format="json"
    )
    assert_envelope(response, 409, "duplicate_key")


def test_missing_token_is_401_and_bad_token_is_401():
    assert_envelope(APIClient().get(url("acme", "entries", "deadbeef")), 401, "not_authenticated")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer kb_nope_nope")
    assert_envelope(client.get(url("acme", "entries", "deadbeef")), 401, "not_authenticated")


def test_foreign_bank_is_404_and_looks_like_a_missing_bank(
    bank, other_bank, token_client, make_entry
):
    theirs = make_entry("Secret", in_bank=other_bank)
    client = token_client(bank)
    foreign = assert_envelope(
        client.get(url("globex", "entries", theirs.short_id)), 404, "bank_not_found"
    )
    missing = assert_envelope(
        client.get(url("no-such-bank", "entries", theirs.short_id)), 404, "bank_not_found"
    )
    assert foreign["message"].replace("globex", "X") == missing["message"].replace(
        "no-such-bank", "X"
    )
    # An entry of another bank is not found through this bank either.
    assert_envelope(client.get(url("acme", "entries", theirs.short_id)), 404, "entry_not_found")


def test_missing_scope_is_403(bank, token_client, make_entry):
    reader = token_client(bank, scopes="read")
    assert_envelope(
        reader.post(url("acme", "entries"), LEARNING, format="json"), 403, "missing_scope"
    )
    entry = make_entry("Readable")
    assert reader.get(url("acme", "entries", entry.short_id)).status_code == 200
    assert_envelope(
        reader.patch(url("acme", "entries", entry.short_id), {"title": "x"}, format="json"),
        403,
        "missing_scope",
    )


def test_revoked_token_is_refused(bank, token_client):
    client = token_client(bank)
    AgentToken.objects.update(revoked_at="2026-01-01T00:00:00Z")
    assert_envelope(client.get(url("acme", "entries", "deadbeef")), 401, "not_authenticated")


def test_token_stored_hashed(bank):
    from kb.services.tokens import create_token

    token, raw = create_token("agent", [bank], "read")
    row = AgentToken.objects.filter(pk=token.pk).values().get()
    assert all(raw not in str(value) for value in row.values())
    assert raw.startswith(f"kb_{token.prefix}_")


def test_unknown_api_path_is_json_404(client_rw):
    assert_envelope(client_rw.get("/api/v1/nothing/here"), 404, "not_found")


def test_query_flat_shape(client_rw, make_entry, hashing_embedder, bank):
    from kb.services.embedding import embed_entries

    a = make_entry("Deploy the reports service", systems=["reports"])
    make_entry("Rotate database credentials")
    embed_entries(Entry.objects.filter(bank=bank))
    response = client_rw.post(
        url("acme", "query"), {"query": "deploy reports", "fold": False, "limit": 2}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"bank", "query", "fold", "no_good_match", "results", "stats"}
    assert body["bank"] == "acme" and body["fold"] is False and len(body["results"]) == 2
    first = body["results"][0]
    # API.md fields, then the agent-grade additions (always present once built).
    assert set(first) >= {
        "confidence",
        "links",
        "corrected_by",
        "superseded_by",
        "id",
        "key",
        "title",
        "kind",
        "status",
        "summary",
        "content",
        "useful_for",
        "systems",
        "tasks",
        "steps",
        "score",
        "rank",
        "matched_by",
        "lifecycle",
        "related",
        "neighbors",
    }
    assert (
        first["id"] == a.short_id
        and first["rank"] == 1
        and first["related"] == []
        and first["neighbors"] == []
    )
    assert set(body["stats"]) >= {"pool", "groups", "folded", "refilled", "neighbors", "took_ms"}
    a.refresh_from_db()
    assert a.usage_count == 1


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"query": ""},
        {"query": "x", "limit": 0},
        {"query": "x", "limit": "many"},
        {"query": "x", "pool": -1},
        {"query": "x", "bogus": 1},
        [1],
    ],
)
def test_query_bad_input_is_400(client_rw, body):
    response = client_rw.post(url("acme", "query"), body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] in {"invalid_input", "invalid_body"}


def test_patch_resolved_by_itself_is_400_not_500(client_rw, make_entry):
    entry = make_entry("Self-resolving")
    response = client_rw.patch(
        f"/api/v1/banks/acme/entries/{entry.short_id}",
        {"lifetime": {"resolved_by": entry.short_id}},
        format="json",
    )
    assert response.status_code == 400 and "lifetime" in response.json()["error"]["fields"]


def test_nul_character_is_400_not_500(client_rw):
    body = {"title": "Has a \u0000 in it", "lifetime": {"durable": True}}
    response = client_rw.post("/api/v1/banks/acme/entries", body, format="json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_string"
