"""One rule for the reason column of historical rows: the ORM path (simple-history's per-row
saves) and the set-wise path (record_rows) store the same text, cut to the column."""

from __future__ import annotations

import pytest

from kb import audit
from kb.history_rows import record_rows
from kb.models import Entry

pytestmark = pytest.mark.django_db

LONG = "Because the supplier changed the part number and the old one is recalled. " * 3


def test_the_rule_matches_the_column():
    column = Entry.history.model._meta.get_field("history_change_reason")
    assert column.max_length == audit.HISTORY_REASON_MAX
    assert audit.history_reason("") is None and audit.history_reason(None) is None


def test_both_paths_store_the_same_cut_reason(make_entry, hashing_embedder):
    entry = make_entry("Part number")
    assert len(LONG) > audit.HISTORY_REASON_MAX
    with audit.acting_as("staff:alice", reason=LONG):
        entry.title = "Part number (recalled)"
        entry.save()  # one historical row through simple-history
        record_rows(Entry, [entry.pk], "~")  # one through the set-wise path
    orm_row, setwise_row = entry.history.order_by("-history_id")[:2][::-1]
    assert orm_row.history_change_reason == setwise_row.history_change_reason
    assert orm_row.history_change_reason == LONG[: audit.HISTORY_REASON_MAX]
    assert {orm_row.history_actor, setwise_row.history_actor} == {"staff:alice"}
