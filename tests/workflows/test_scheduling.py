"""Regeneration after edits: debounced, once per burst, after commit; tasks idempotent."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import pytest
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from graph.models import Edge
from kb.models import Entry
from kb.services.entries import update_entry
from workflows import tasks
from workflows.models import GapReport, PendingRegeneration
from workflows.services import scheduling
from workflows.services.subgraph import INACTIVE_STATUSES, MEMBERSHIP_RELATION, PROCESS_KIND

pytestmark = pytest.mark.django_db


def flow_edge_ends(edge_ids: Iterable[int]) -> set[int]:
    """Reference (the rule as two ORM reads; the product runs it as one statement,
    ``scheduling.processes_touched_by``): the entries at either end of those edges that carry
    a workflow role or membership. Read from the edges' history rows, so an edge deleted by
    the write (a revert) and an edge re-pointed by it (a merge: old and new ends) still
    count."""
    ids = list(edge_ids)
    if not ids:
        return set()
    relevant = Q(type__workflow_role__gt="") | Q(type__name=MEMBERSHIP_RELATION)
    ends = (
        Edge.history.model.objects.filter(relevant, id__in=ids)
        .values_list("from_entry_id", "to_entry_id")
        .distinct()
    )
    return {pk for pair in ends for pk in pair}


def affected_processes(entry_ids: Iterable[int]) -> list[tuple[int, int]]:
    """Reference: (process pk, bank pk) of every live process the entries belong to or feed.

    Membership edges of any time count, so an entry removed from a process still triggers it.
    """
    ids = list(entry_ids)
    if not ids:
        return []
    feeding_steps = Edge.objects.filter(to_entry_id__in=ids).exclude(type__workflow_role="")
    members = Q(from_entry_id__in=ids) | Q(from_entry_id__in=feeding_steps.values("from_entry_id"))
    containers = Edge.objects.filter(type__name=MEMBERSHIP_RELATION).filter(members)
    return list(
        Entry.objects.filter(kind__name=PROCESS_KIND)
        .filter(Q(pk__in=ids) | Q(pk__in=containers.values("to_entry_id")))
        .exclude(status__in=INACTIVE_STATUSES)
        .values_list("pk", "bank_id")
    )


@pytest.fixture
def enqueued(monkeypatch):
    """Record what would go to the broker (the task queue, not the database, is replaced)."""
    calls = []
    monkeypatch.setattr(
        tasks.regenerate_after_edit,
        "apply_async",
        lambda args, countdown=None: calls.append((args, countdown)),
    )
    return calls


@pytest.fixture
def process(flow):
    f = flow()
    a = f.step("A", start=True)
    b = f.step("B", terminal=True)
    f.chain(a, b)
    f.a, f.b = a, b
    return f


# These tests commit for real: each service call is its own transaction, as in production.
committing = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@committing
def test_a_burst_of_edits_schedules_one_regeneration(enqueued, hashing_embedder, flow, settings):
    settings.WORKFLOWS_REGENERATE_COUNTDOWN = 45
    # Building the process is a burst of some twenty committed edits: one regeneration.
    f = flow()
    a, b = f.step("A", start=True), f.step("B", terminal=True)
    f.chain(a, b)
    assert len(enqueued) == 1
    (args, countdown) = enqueued[0]
    assert args[0] == f.process.pk and countdown == 45
    marker = PendingRegeneration.objects.get()
    assert marker.process == f.process and args[1] == marker.requested_at.isoformat()
    # More edits while the marker is pending ride along.
    c = f.step("C")
    f.link(b, c, "precedes")
    update_entry(f.bank, c, {"metadata": {"terminal": True}})
    assert len(enqueued) == 1
    # The task runs once the burst is over: it claims the marker and builds one report.
    assert tasks.regenerate_after_edit(*args).startswith("report ")
    report = GapReport.objects.get(process=f.process)
    assert report.trigger == "edit" and report.step_count == 3
    assert not PendingRegeneration.objects.exists()
    # A second delivery of the same task changes nothing.
    assert tasks.regenerate_after_edit(*args) == "already up to date"
    assert GapReport.objects.filter(process=f.process).count() == 1
    # Usage counters are not an edit of the process.
    a.usage_count = 5
    a.save(update_fields=["usage_count", "last_used_at"])
    assert len(enqueued) == 1
    # The next real edit starts a new burst.
    update_entry(f.bank, a, {"title": "Receive the order"})
    assert len(enqueued) == 2


@committing
def test_one_transaction_is_one_flush(enqueued, hashing_embedder, flow):
    from kb.models import Entry
    from kb.unit_of_work import pending_events

    f = flow()
    tail = f.step("Tail", start=True)
    enqueued.clear()
    PendingRegeneration.objects.all().delete()
    with transaction.atomic():
        for i in range(5):
            f.link(tail, f.step(f"Extra {i}"), "precedes")
        # One event queued for the whole transaction, with every entry it wrote.
        (event,) = pending_events()
        assert event.bank_id == f.bank.pk and len(event.ids(Entry)) >= 5
        assert enqueued == []  # nothing before the commit
    assert len(enqueued) == 1 and pending_events() == []


@committing
def test_a_rolled_back_transaction_schedules_nothing(enqueued, hashing_embedder, flow):
    f = flow()
    tail = f.step("Tail", start=True)
    enqueued.clear()
    PendingRegeneration.objects.all().delete()
    with pytest.raises(RuntimeError), transaction.atomic():
        f.link(tail, f.step("Doomed"), "precedes")
        raise RuntimeError("abort")
    assert enqueued == []
    f.link(tail, f.step("Kept", terminal=True), "precedes")
    assert len(enqueued) == 1


@committing
def test_edits_outside_any_process_schedule_nothing(enqueued, hashing_embedder, flow):
    f = flow()  # a process exists, but these edits do not touch it
    f.step("A", start=True, terminal=True)
    enqueued.clear()
    loose = [f.entry("Loose fact", "fact"), f.entry("Another fact", "fact")]
    f.link(loose[0], loose[1], "precedes")
    update_entry(f.bank, loose[0], {"title": "Loose fact, edited"})
    assert enqueued == []
    # Whereas making one of them a member of the process does touch it.
    PendingRegeneration.objects.all().delete()
    f.link(loose[0], f.process, "part_of")
    assert len(enqueued) == 1


def test_affected_processes_reach_members_and_what_they_point_at(process, flow):
    f = process
    contract = f.artifact("Contract", member=False, external=True)
    f.link(f.a, contract, "requires")
    role = f.roles["Operations"]
    other = flow("Other process")
    other.step("X", start=True, terminal=True)

    def found(entry_ids):
        return scheduling.processes_touched_by(entry_ids, [])

    assert found([f.a.pk]) == [(f.process.pk, f.bank.pk)]
    assert found([contract.pk]) == [(f.process.pk, f.bank.pk)]
    assert found([role.pk]) == [(f.process.pk, f.bank.pk)]
    assert found([f.process.pk]) == [(f.process.pk, f.bank.pk)]
    assert sorted(found([f.a.pk, other.process.pk])) == sorted(
        [(f.process.pk, f.bank.pk), (other.process.pk, f.bank.pk)]
    )


def test_a_stale_marker_is_replaced(process, enqueued):
    f = process
    PendingRegeneration.objects.create(
        bank=f.bank,
        process=f.process,
        requested_at=timezone.now() - scheduling.stale_after() - dt.timedelta(seconds=1),
    )
    assert scheduling.request_regeneration(f.bank.pk, f.process.pk) is True
    assert scheduling.request_regeneration(f.bank.pk, f.process.pk) is False
    assert len(enqueued) == 1


def test_a_redelivered_task_after_a_crash_still_builds(process):
    f = process
    requested = timezone.now().isoformat()
    # The marker was claimed by a run that died before committing its report.
    assert scheduling.run_pending(f.process.pk, requested).startswith("report ")
    assert GapReport.objects.filter(process=f.process).count() == 1


def test_beat_job_schedules_every_live_process(process, flow, monkeypatch):
    other = flow("Second")
    other.step("X", start=True, terminal=True)
    calls = []
    monkeypatch.setattr(tasks.regenerate_gap_report, "delay", lambda *a: calls.append(a))
    assert tasks.regenerate_all_gap_reports() == 2
    assert sorted(calls) == sorted(
        [(process.process.pk, "schedule"), (other.process.pk, "schedule")]
    )
    assert tasks.regenerate_gap_report(process.process.pk, "schedule").startswith("report ")
    assert GapReport.objects.get(process=process.process).trigger == "schedule"
    assert tasks.regenerate_gap_report(process.a.pk) == "process gone"


def test_the_subscribers_one_statement_answers_as_its_two_reads(process, flow):
    """``processes_touched_by`` (one prepared statement, what the post-commit subscriber runs)
    finds what ``affected_processes(entries | flow_edge_ends(edges))`` finds, edge by edge."""
    f = process
    contract = f.artifact("Contract", member=False, external=True)
    f.link(f.a, contract, "requires")
    loose = [f.entry("Loose fact", "fact"), f.entry("Another fact", "fact")]
    f.link(loose[0], loose[1], "see_also")
    other = flow("Other process")
    x = other.step("X", start=True, terminal=True)
    retired = flow("Retired process")
    retired.step("Y", start=True, terminal=True)
    retired.process.status = "retired"
    retired.process.save()
    gone = f.link(loose[1], f.process, "part_of")
    gone_id = gone.pk
    gone.delete()  # only its history rows remain
    edges = sorted(Edge.objects.values_list("pk", flat=True)) + [gone_id]
    entries = [f.a.pk, f.b.pk, contract.pk, x.pk, retired.process.pk, *(e.pk for e in loose)]

    def two_reads(entry_ids, edge_ids):
        ids = set(entry_ids) | flow_edge_ends(edge_ids)
        return affected_processes(ids) if ids else []

    cases = [([pk], []) for pk in entries] + [([], [pk]) for pk in edges]
    cases += [(entries, []), ([], edges), (entries, edges), ([loose[0].pk], [gone_id])]
    found = 0
    for entry_ids, edge_ids in cases:
        one = scheduling.processes_touched_by(entry_ids, edge_ids)
        assert one == two_reads(entry_ids, edge_ids), (entry_ids, edge_ids)
        found += bool(one)
    assert found > len(cases) // 2  # most cases reach a process: the comparison is not empty
    assert scheduling.processes_touched_by([loose[0].pk], []) == []
    assert scheduling.processes_touched_by([], [gone_id]) == [(f.process.pk, f.bank.pk)]
    assert (retired.process.pk, f.bank.pk) not in scheduling.processes_touched_by(entries, edges)
