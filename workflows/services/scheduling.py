"""Regenerate reports after edits, debounced: N edits in a burst regenerate a process once.

Every committed write publishes one ``kb.events.BankChanged`` (the unit of work, whichever
path wrote the rows); :func:`bank_changed` takes the entries it changed and the ends of its
flow edges, and one query maps them to the processes they belong to (the entry is the
process, a member of it, or something a member's flow edge points at). Each
affected process gets a :class:`PendingRegeneration` marker; only the edit that creates the
marker schedules the task, with a countdown, so later edits of the burst ride along. The task
deletes the marker before it reads the graph, so an edit made during a build schedules another.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from django.conf import settings
from django.utils import timezone

from graph.models import Edge
from kb.models import Entry
from workflows.models import GapReport, PendingRegeneration, ReportTrigger
from workflows.services.reports import build_report
from workflows.services.subgraph import INACTIVE_STATUSES, MEMBERSHIP_RELATION, PROCESS_KIND


def countdown_seconds() -> int:
    return settings.WORKFLOWS_REGENERATE_COUNTDOWN


def stale_after() -> dt.timedelta:
    """A marker older than this lost its task (a broker outage): the next edit replaces it."""
    return dt.timedelta(seconds=max(600, 20 * countdown_seconds()))


def bank_changed(sender, event, **kwargs) -> None:
    """``kb.events.bank_changed`` subscriber: the entries a committed write changed, and the
    ends of the edges it changed that carry a workflow role or membership, schedule the
    processes they belong to (one prepared statement: :data:`PROCESSES_TOUCHED`)."""
    entry_ids, edge_ids = event.ids(Entry), event.ids(Edge)
    if entry_ids or edge_ids:
        for process_pk, bank_pk in processes_touched_by(entry_ids, edge_ids):
            request_regeneration(bank_pk, process_pk)


# In one statement: the
# entries the write changed and the ends of its edges that carry a workflow role or membership
# (from the edges' history rows, so a deleted or re-pointed edge still counts), then every live
# process they are, belong to, or feed (membership edges of any time). Each arm filters the
# edges on an indexed end (UNIONs, not an OR of subqueries, which loses those indexes).
PROCESSES_TOUCHED = """
WITH touched AS (
    SELECT unnest(%(entries)s::bigint[]) AS id
    UNION
    SELECT unnest(ARRAY[h.from_entry_id, h.to_entry_id])
    FROM graph_historicaledge h JOIN graph_edgetype t ON t.id = h.type_id
    WHERE h.id = ANY(%(edges)s::bigint[])
      AND (t.workflow_role > '' OR t.name = %(membership)s)
), members AS (
    SELECT id FROM touched
    UNION
    SELECT f.from_entry_id FROM graph_edge f JOIN graph_edgetype ft ON ft.id = f.type_id
    WHERE f.to_entry_id IN (SELECT id FROM touched) AND ft.workflow_role <> ''
), candidates AS (
    SELECT id FROM touched
    UNION
    SELECT m.to_entry_id FROM graph_edge m JOIN graph_edgetype mt ON mt.id = m.type_id
    WHERE mt.name = %(membership)s AND m.from_entry_id IN (SELECT id FROM members)
)
SELECT p.id, p.bank_id
FROM kb_entry p
JOIN kb_entrykind k ON k.id = p.kind_id
JOIN kb_bank b ON b.id = p.bank_id
WHERE p.id IN (SELECT id FROM candidates)
  AND k.name = %(process)s
  AND p.status <> ALL(%(inactive)s::text[])
ORDER BY b.slug, p.title
"""


def processes_touched_by(
    entry_ids: Iterable[int], edge_ids: Iterable[int]
) -> list[tuple[int, int]]:
    """(process pk, bank pk) of every live process the entries, or the workflow ends of the
    edges, belong to or feed, in one prepared statement (the test module keeps the same rule
    as two ORM reads, its reference)."""
    from kb.prepared import fetch_prepared

    return [
        (pk, bank_pk)
        for pk, bank_pk in fetch_prepared(
            PROCESSES_TOUCHED,
            {
                "entries": sorted(entry_ids),
                "edges": sorted(edge_ids),
                "membership": MEMBERSHIP_RELATION,
                "process": PROCESS_KIND,
                "inactive": [str(status.value) for status in INACTIVE_STATUSES],
            },
        )
    ]


def request_regeneration(bank_pk: int, process_pk: int) -> bool:
    """Mark the process for regeneration; schedule the task only if no marker was pending."""
    from workflows.tasks import regenerate_after_edit

    now = timezone.now()
    PendingRegeneration.objects.filter(
        process_id=process_pk, requested_at__lt=now - stale_after()
    ).delete()
    marker, created = PendingRegeneration.objects.get_or_create(
        process_id=process_pk, defaults={"bank_id": bank_pk, "requested_at": now}
    )
    if created:
        regenerate_after_edit.apply_async(
            (process_pk, marker.requested_at.isoformat()), countdown=countdown_seconds()
        )
    return created


def run_pending(process_pk: int, requested_at: str | None = None) -> str:
    """The task body: claim the marker and rebuild.

    Idempotent: a second delivery finds the marker gone and a report newer than the request,
    and does nothing; a delivery after a crash mid-build (marker gone, no newer report) builds.
    """
    claimed, _ = PendingRegeneration.objects.filter(process_id=process_pk).delete()
    process = (
        Entry.objects.filter(pk=process_pk, kind__name=PROCESS_KIND)
        .exclude(status__in=INACTIVE_STATUSES)
        .select_related("bank")
        .first()
    )
    if process is None:
        return "process gone"
    if not claimed and requested_at:
        since = dt.datetime.fromisoformat(requested_at)
        if GapReport.objects.filter(process=process, generated_at__gte=since).exists():
            return "already up to date"
    built = build_report(process.bank, process, trigger=ReportTrigger.EDIT)
    return f"report {built.report.pk}: {built.report.finding_count} findings"
