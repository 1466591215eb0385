"""Near-exact duplicates are refused by the create-entry service, whichever interface writes.

REST answers 409 ``duplicate_entry`` naming the existing entry; ``allow_duplicate`` stores the
copy; the admin add form shows the refusal and offers the checkbox. (MCP: ``tests/mcp``.)
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from kb.errors import Conflict
from kb.models import Entry, EntryKind
from kb.services.duplicates import is_duplicate_pair, normalised_text, numbers_in
from kb.services.embedding import embed_entries
from kb.services.entries import clean_entry_data, create_entry

pytestmark = pytest.mark.django_db

ENTRIES = "/api/v1/banks/acme/entries"
RECIPE = {
    "title": "Redis eviction drops session keys",
    "content": "With maxmemory-policy allkeys-lru, Redis evicts session keys under load and "
    "users get logged out; use volatile-lru and give cache keys a TTL.",
    "kind": "gotcha",
    "lifetime": {"durable": True},
}


def write(bank, payload: dict, **kwargs) -> Entry:
    return create_entry(bank, clean_entry_data(bank, payload), **kwargs)


def test_text_rules_are_general():
    assert normalised_text("  Deploys  FREEZE, month-end!") == "deploys freeze month end"
    assert numbers_in("retry 3 times, v2.5.1 at 06:30") == ("3", "2.5.1", "06:30")
    assert numbers_in("note 1-2") != numbers_in("note 2-1")
    # Equal normalised text is a duplicate whatever the cosine; different numbers never are.
    assert is_duplicate_pair("Retry 3 times.", "retry 3 times", 0.0, 0.92)
    assert not is_duplicate_pair("Retry 3 times.", "Retry 5 times.", 0.99, 0.92)
    assert not is_duplicate_pair("Use volatile-lru.", "Use allkeys-lru.", 0.91, 0.92)


def test_same_text_is_refused_before_any_vector_exists(bank):
    first = write(bank, RECIPE)
    assert not Entry.objects.filter(pk=first.pk, embedding__isnull=False).exists()
    copy = {**RECIPE, "title": "  redis EVICTION drops session keys.", "kind": "fact"}
    with pytest.raises(Conflict) as refused:
        write(bank, copy)
    assert refused.value.code == "duplicate_entry"
    assert refused.value.fields == {"existing": first.short_id}
    assert first.short_id in refused.value.message and "update" in refused.value.message
    assert Entry.objects.filter(bank=bank).count() == 1  # nothing half-written


def test_allow_duplicate_stores_the_copy(bank):
    first = write(bank, RECIPE)
    second = write(bank, RECIPE, allow_duplicate=True)
    assert second.pk != first.pk and second.title == first.title


def test_another_bank_is_never_read(bank, other_bank):
    write(bank, RECIPE)
    assert write(other_bank, RECIPE).bank == other_bank


def test_merged_entries_are_not_duplicates(bank):
    first = write(bank, RECIPE)
    Entry.objects.filter(pk=first.pk).update(status="merged")
    assert write(bank, RECIPE).pk != first.pk


@pytest.mark.model
def test_a_reworded_copy_is_refused_on_the_real_models_vectors(bank):
    first = write(bank, RECIPE)
    write(bank, {**RECIPE, "title": "Quarterly VAT filing", "content": "Due 7th of month 2."})
    embed_entries(Entry.objects.filter(bank=bank))
    reworded = {
        **RECIPE,
        "content": "With maxmemory-policy allkeys-lru Redis evicts session keys under load, and "
        "users get logged out. Use volatile-lru and give the cache keys a TTL.",
    }
    with pytest.raises(Conflict) as refused:
        write(bank, reworded)
    assert refused.value.fields == {"existing": first.short_id}
    assert "similarity 0.9" in refused.value.message


@pytest.mark.model
def test_a_copy_that_changes_a_number_is_not_refused(bank):
    base = {**RECIPE, "title": "Partner API rate limit"}
    write(bank, {**base, "content": "Partner keys get 100 requests per minute; above: 429."})
    embed_entries(Entry.objects.filter(bank=bank))
    changed = write(
        bank, {**base, "content": "Partner keys get 1000 requests per minute; above: 429."}
    )
    assert changed.pk is not None


def test_rest_answers_409_and_allow_duplicate_stores(client_rw, bank):
    made = client_rw.post(ENTRIES, RECIPE, format="json")
    assert made.status_code == 201, made.content
    again = client_rw.post(ENTRIES, RECIPE, format="json")
    assert again.status_code == 409
    error = again.json()["error"]
    assert error["code"] == "duplicate_entry"
    assert error["fields"] == {"existing": made.json()["id"]}
    assert made.json()["id"] in error["message"]
    stored = client_rw.post(ENTRIES, {**RECIPE, "allow_duplicate": True}, format="json")
    assert stored.status_code == 201 and stored.json()["id"] != made.json()["id"]
    assert Entry.objects.filter(bank=bank).count() == 2


def test_rest_refuses_a_non_boolean_allow_duplicate(client_rw, bank):
    for value in ("yes", None, 1):
        bad = client_rw.post(ENTRIES, {**RECIPE, "allow_duplicate": value}, format="json")
        assert bad.status_code == 400
        assert "allow_duplicate" in bad.json()["error"]["fields"]
    assert not Entry.objects.filter(bank=bank).exists()


def test_patch_does_not_take_allow_duplicate(client_rw, bank):
    made = client_rw.post(ENTRIES, RECIPE, format="json").json()
    patched = client_rw.patch(
        f"{ENTRIES}/{made['id']}", {"allow_duplicate": True, "title": "x"}, format="json"
    )
    assert patched.status_code == 400 and "allow_duplicate" in patched.json()["error"]["fields"]


def admin_add_data(bank, **overrides) -> dict:
    data = {
        "title": RECIPE["title"],
        "key": "",
        "summary": "",
        "content": RECIPE["content"],
        "useful_for": "",
        "steps": "null",
        "metadata": "{}",
        "bank": str(bank.pk),
        "kind": str(EntryKind.objects.get(bank=None, name="fact").pk),
        "status": "live",
        "systems": "",
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
    data.update(overrides)
    return data


def test_admin_add_form_refuses_and_the_checkbox_stores(admin_client, bank):
    first = write(bank, RECIPE)
    url = reverse("admin:kb_entry_add")
    assert b"allow_duplicate" in admin_client.get(url).content
    refused = admin_client.post(url, admin_add_data(bank))
    assert refused.status_code == 200
    errors = refused.context["adminform"].form.errors
    assert first.short_id in errors["allow_duplicate"][0]
    assert Entry.objects.filter(bank=bank).count() == 1
    stored = admin_client.post(url, admin_add_data(bank, allow_duplicate="on"))
    assert stored.status_code == 302
    assert Entry.objects.filter(bank=bank, title=RECIPE["title"]).count() == 2
    change = admin_client.get(reverse("admin:kb_entry_change", args=[first.pk]))
    assert b"allow_duplicate" not in change.content  # an edit is not a new entry


def test_nearest_entries_reads_past_merged_and_deleted_neighbours(
    bank, other_bank, hashing_embedder, django_assert_num_queries
):
    """The nearest vectors are read first and joined for their status after: when merged or
    deleted entries crowd the rows read (more than ``REACH`` of them), the statement of record
    answers instead, so the live nearest are the same either way; another bank's identical
    entries are never read."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from kb.services.duplicates import REACH, _nearest_of_record, nearest_entries
    from kb.services.embedding import embed_query, one_forward_pass

    text = "Rotate the staging credentials after the vault job"
    payload = {"title": text, "content": "", "kind": "fact", "lifetime": {"durable": True}}
    gone = [write(bank, payload, allow_duplicate=True) for _ in range(REACH + 2)]
    write(other_bank, payload)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    live = [  # ever further from the text: no ties at the cut
        write(bank, dict(payload, title=f"{text} {' '.join(words[:k])}")) for k in range(1, 7)
    ]
    embed_entries(Entry.objects.all())
    Entry.objects.filter(pk__in=[e.pk for e in gone[:-1]]).update(status="deleted")
    vector = embed_query(text)
    with one_forward_pass([text]), CaptureQueriesContext(connection) as crowded:
        near = nearest_entries(bank, text, limit=5)
    assert [n.short_id for n in near] == [
        n.short_id for n in _nearest_of_record(bank, vector, 5, None)
    ]
    assert near[0].short_id == gone[-1].short_id  # the live copy, at distance 0
    assert {n.short_id for n in near} <= {e.short_id for e in [gone[-1], *live]}
    assert len(crowded.captured_queries) == 2  # the rows read, then the statement of record
    Entry.objects.filter(pk__in=[e.pk for e in gone[:-1]]).update(status="merged")
    with one_forward_pass([text]), django_assert_num_queries(2):
        assert len(nearest_entries(bank, text, limit=5)) == 5
    Entry.objects.filter(pk__in=[e.pk for e in gone[:-1]]).update(status="live")
    with one_forward_pass([text]), django_assert_num_queries(1):
        near = nearest_entries(bank, text, limit=5)
    assert all(n.distance < 1e-6 for n in near)  # five of the identical copies, one statement
