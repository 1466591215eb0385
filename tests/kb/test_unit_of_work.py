"""One unit of work per write: the same use case written per row (``link``: a ``save()``,
history by simple-history) and set-wise (an import's edge line: ``COPY``, history by
``record_rows``) gives history rows stamped by the same rule and exactly one post-commit
event per commit; a rolled-back write publishes nothing.

These tests commit for real (each service call is its own transaction, as in production):
the event is published by ``transaction.on_commit``.
"""

from __future__ import annotations

import json

import pytest
from django.db import transaction

from config.serving import context as serving
from graph.edges.links import link, unlink
from graph.models import Edge
from kb.audit import HISTORY_REASON_MAX, history_stamp
from kb.events import BankChanged, bank_changed
from kb.models import Entry, Operation
from kb.services.bulk import import_bank
from kb.services.entries import verify_entry
from kb.unit_of_work import unit_of_work

committing = pytest.mark.django_db(transaction=True, serialized_rollback=True)

# 300 characters: longer than the history rows' reason column (varchar(100)).
LONG_REASON = ("The supplier confirmed the dependency in writing on the call. " * 6)[:300]


@pytest.fixture
def events():
    seen: list[BankChanged] = []

    def receive(sender, event, **kwargs):
        seen.append(event)

    bank_changed.connect(receive, dispatch_uid="test_unit_of_work")
    yield seen
    bank_changed.disconnect(dispatch_uid="test_unit_of_work")


@pytest.fixture
def four(make_entry, hashing_embedder):
    return [make_entry(f"Service {name}") for name in "ABCD"]


def link_line(source: Entry, target: Entry) -> str:
    return json.dumps(
        {"type": "edge", "from": source.short_id, "to": target.short_id, "relation": "cites"}
    )


def history_of(edge_pk: int):
    (row,) = Edge.history.model.objects.filter(id=edge_pk)
    return row


@committing
def test_per_row_and_set_wise_links_stamp_history_alike_with_one_event_each(bank, four, events):
    a, b, c, d = four
    events.clear()
    # Per row: link() saves the edge, simple-history writes its history row.
    per_row = link(
        bank,
        {"from": a.short_id, "to": b.short_id, "relation": "cites"},
        reason=LONG_REASON,
        actor="agent:twin",
    )
    assert len(events) == 1
    # Set-wise: the import writes the edge by COPY, record_rows writes its history row.
    import_bank(bank, link_line(c, d), reason=LONG_REASON, actor="agent:twin")
    assert len(events) == 2
    set_wise = Edge.objects.get(from_entry=c, to_entry=d)

    for edge, event in ((per_row, events[0]), (set_wise, events[1])):
        row = history_of(edge.pk)
        op = Operation.objects.get(pk=row.operation_id)
        # One rule per column, whichever path wrote the row.
        assert row.history_type == "+"
        assert row.history_actor == op.actor == "agent:twin"
        assert op.reason == LONG_REASON  # the operation keeps the whole reason
        assert row.history_change_reason == LONG_REASON[:HISTORY_REASON_MAX]
        # One event, naming the bank, the operation and the edge written.
        assert event.bank_id == bank.pk
        assert event.operation_ids == (op.pk,)
        assert event.ids(Edge) == event.ids(Edge, "+") == {edge.pk}
        assert ("graph.edge", "+") in event.kinds
    assert history_of(per_row.pk).history_change_reason == (
        history_of(set_wise.pk).history_change_reason
    )


@committing
def test_a_set_wise_close_and_a_per_row_save_share_the_reason_rule(bank, four, events):
    """unlink closes the edge set-wise (UPDATE + record_rows); the per-row save of a link is
    the other path: both cut a 300-character reason the same way."""
    a, b, _, _ = four
    edge = link(bank, {"from": a.short_id, "to": b.short_id, "relation": "cites"})
    events.clear()
    unlink(bank, edge.pk, LONG_REASON)
    (event,) = events
    closing = Edge.history.model.objects.filter(id=edge.pk, history_type="~").get()
    assert closing.history_change_reason == LONG_REASON[:HISTORY_REASON_MAX]
    assert closing.history_change_reason == history_stamp(LONG_REASON)["history_change_reason"]
    assert event.ids(Edge, "~") == {edge.pk} and event.operation_ids == (closing.operation_id,)


@committing
def test_one_transaction_is_one_event_and_a_rollback_is_none(bank, four, events):
    a, b, c, d = four
    events.clear()
    with pytest.raises(RuntimeError), transaction.atomic():
        link(bank, {"from": a.short_id, "to": b.short_id, "relation": "cites"})
        import_bank(bank, link_line(c, d))
        raise RuntimeError("abort")
    assert events == []
    assert not Edge.objects.filter(bank=bank).exists()

    with transaction.atomic():
        first = link(bank, {"from": a.short_id, "to": b.short_id, "relation": "cites"})
        import_bank(bank, link_line(c, d))
        assert events == []  # nothing before the commit
    (event,) = events
    second = Edge.objects.get(from_entry=c)
    assert event.ids(Edge, "+") == {first.pk, second.pk}
    assert len(event.operation_ids) == 2


@committing
def test_a_bookkeeping_save_is_no_event_and_an_edit_is_one(bank, four, events):
    a = four[0]
    events.clear()
    verify_entry(bank, a)  # moves verified_at / verified_by only
    assert [e.ids(Entry) for e in events] == [frozenset()]  # the operation, no changed row
    events.clear()
    a.title = "Service A, renamed"
    a.save()  # a write outside any operation is still seen, once
    (event,) = events
    assert event.ids(Entry, "~") == {a.pk} and event.operation_ids == ()


@committing
def test_the_operation_carries_the_request_id_and_joins_the_log_context(bank, four):
    a, b, _, _ = four
    info = serving.RequestInfo(request_id="req-uow-1")
    token = serving.begin(info)
    try:
        edge = link(bank, {"from": a.short_id, "to": b.short_id, "relation": "cites"})
    finally:
        serving.end(token)
    op = Operation.objects.get(pk=history_of(edge.pk).operation_id)
    assert op.request_id == "req-uow-1"
    assert info.operation_ids == [op.pk]


@committing
def test_a_nested_unit_joins_the_open_one(bank, four, events):
    a, b, c, d = four
    events.clear()
    with unit_of_work(bank, "import", reason="outer", actor="staff:ann") as outer:
        edge = link(bank, {"from": a.short_id, "to": b.short_id, "relation": "cites"})
        import_bank(bank, link_line(c, d))
    (event,) = events
    assert event.operation_ids == (outer.pk,)
    assert history_of(edge.pk).operation_id == outer.pk
    assert history_of(Edge.objects.get(from_entry=c).pk).history_actor == "staff:ann"
