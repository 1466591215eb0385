"""Models and database constraints of the core app."""

import pytest
from django.db import IntegrityError, connection, transaction

from kb.models import Entry, EntryKind
from kb.services.entries import unique_short_id

pytestmark = pytest.mark.django_db


def test_core_kinds_are_seeded_with_weights():
    kinds = {k.name: k for k in EntryKind.objects.filter(bank=None)}
    assert kinds["decision"].weight == 3
    assert kinds["lesson"].weight == 2
    assert kinds["container"].weight == -3 and kinds["container"].container
    assert kinds["structural"].weight == 0 and kinds["structural"].structural
    assert {
        "fact",
        "gotcha",
        "recipe",
        "playbook",
        "step",
        "decision_point",
        "role",
        "process",
    } <= set(kinds)


def test_short_ids_are_eight_hex_and_unique_per_bank(bank, make_entry):
    ids = {make_entry(f"Entry {i}").short_id for i in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 8 and int(i, 16) >= 0 and i == i.lower() for i in ids)


def test_unique_short_id_skips_taken(bank, make_entry, monkeypatch):
    existing = make_entry("Taken").short_id
    sequence = iter([existing, "0badc0de"])
    monkeypatch.setattr("kb.models.new_short_id", lambda: next(sequence))
    assert unique_short_id(bank) == "0badc0de"


def test_same_short_id_allowed_in_two_banks(bank, other_bank, make_entry):
    a = make_entry("A")
    b = make_entry("B", in_bank=other_bank)
    Entry.objects.filter(pk=b.pk).update(short_id=a.short_id)
    assert Entry.objects.filter(short_id=a.short_id).count() == 2


def test_short_id_unique_within_bank_enforced_by_database(bank, make_entry):
    a = make_entry("A")
    b = make_entry("B")
    with pytest.raises(IntegrityError), transaction.atomic():
        Entry.objects.filter(pk=b.pk).update(short_id=a.short_id)


def test_short_id_format_enforced_by_database(bank, make_entry):
    a = make_entry("A")
    with pytest.raises(IntegrityError), transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("UPDATE kb_entry SET short_id = 'XYZ12345' WHERE id = %s", [a.pk])


def test_key_unique_per_bank_in_database(bank, make_entry):
    make_entry("A", key="service:reports")
    b = make_entry("B")
    with pytest.raises(IntegrityError), transaction.atomic():
        Entry.objects.filter(pk=b.pk).update(key="service:reports")


def test_lifetime_exactly_one_enforced_by_database(bank, make_entry):
    a = make_entry("A")
    with pytest.raises(IntegrityError), transaction.atomic():
        with connection.cursor() as cur:
            cur.execute(
                "UPDATE kb_entry SET durable = true, expires_at = '2030-01-01' WHERE id = %s",
                [a.pk],
            )
    with pytest.raises(IntegrityError), transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("UPDATE kb_entry SET durable = false WHERE id = %s", [a.pk])


def test_entry_history_records_operation_and_actor(bank, make_entry):
    from kb import audit

    with audit.acting_as("agent:tester"):
        entry = make_entry("Audited")
    row = entry.history.latest()
    assert row.operation_id is not None
    assert row.operation.kind == "create"
    assert row.history_actor == "agent:tester"
    assert row.operation.actor == "agent:tester"


def test_lifetime_property_shapes(bank, make_entry):
    durable = make_entry("Durable")
    expiring = make_entry("Expiring", lifetime={"expires_at": "2020-01-02"})
    resolved = make_entry("Resolved", lifetime={"resolved_by": durable.short_id})
    assert durable.lifetime == {"durable": True}
    assert expiring.lifetime == {"expires_at": "2020-01-02"} and expiring.is_expired
    assert resolved.lifetime == {"resolved_by": durable.short_id}
