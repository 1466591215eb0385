"""The answer's entry read (graph/retrieval/entries.py) gives what the ORM gives for every
field an answer reads, in one statement, and a field it does not read stays reachable."""

from __future__ import annotations

import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from graph.retrieval.entries import FIELD_NAMES, answer_entries
from kb.models import Entry

pytestmark = pytest.mark.django_db


def test_answer_entries_match_the_orm_field_by_field(bank, make_entry):
    playbook = make_entry(
        "Recover a batch",
        kind="playbook",
        steps=["find it", "replay “it”", "reconcile\u2028now"],
        systems=["billing", "ledger"],
        tasks=["recovery"],
        useful_for="when a nightly batch failed",
    )
    plain = make_entry("A plain fact")
    retired = make_entry("An old way")
    Entry.objects.filter(pk=retired.pk).update(
        status="retired",
        retired_reason="replaced",
        durable=False,
        expires_at=datetime.date(2020, 1, 2),
    )
    ids = [playbook.pk, plain.pk, retired.pk]
    with CaptureQueriesContext(connection) as ctx:
        got = answer_entries(ids + [10**12])  # an unknown id is left out
    assert len(ctx.captured_queries) == 1
    assert set(got) == set(ids)
    orm = Entry.objects.select_related("kind").in_bulk(ids)
    for pk in ids:
        for name in FIELD_NAMES:
            assert getattr(got[pk], name) == getattr(orm[pk], name), (pk, name)
        with CaptureQueriesContext(connection) as ctx:
            assert got[pk].kind.name == orm[pk].kind.name
            assert got[pk].is_expired == orm[pk].is_expired
        assert not ctx.captured_queries  # the kind came with the row
    assert got[playbook.pk].steps == ["find it", "replay “it”", "reconcile\u2028now"]
    assert got[retired.pk].is_expired and got[retired.pk].retired_reason == "replaced"
    assert got[plain.pk].created_at == orm[plain.pk].created_at  # deferred, still readable
    assert answer_entries([]) == {}


def test_answer_entries_run_a_connected_init_receiver(bank, make_entry):
    """With a ``post_init`` receiver connected the instances are made by ``Model.from_db``, so
    the receiver sees each of them (without one they are made directly, as
    the test above compares)."""
    from django.db.models.signals import post_init

    entry = make_entry("Seen by a receiver")
    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance.pk)

    post_init.connect(receiver, sender=Entry)
    try:
        got = answer_entries([entry.pk])
    finally:
        post_init.disconnect(receiver, sender=Entry)
    assert seen == [entry.pk]
    assert got[entry.pk].title == "Seen by a receiver" and got[entry.pk].kind.name == "fact"
    assert got[entry.pk]._state.adding is False and got[entry.pk]._state.db == "default"
    assert answer_entries([entry.pk])[entry.pk]._state.adding is False
