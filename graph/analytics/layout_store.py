"""The per-bank layout cache: read a bank's graph, compute its layout, store it, and refresh it
after edits through a debounced Celery job.

- ``refresh_layout(bank)`` recomputes and replaces the cached row (the job's body).
- ``request_layout(bank_pk)`` marks the row and schedules one job; further requests while the
  mark stands do nothing, so a burst of edits costs one layout.
- Edits reach ``request_layout`` through the unit of work's post-commit event
  (``kb.events.bank_changed``, one per committed write, whichever path wrote the rows;
  ``connect_signals``). Without a broker (tasks run eagerly) the subscription does nothing by
  default and readers refresh small banks themselves.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from graph.analytics.layout import compute_layout
from graph.edges.links import current_q
from graph.models import Edge, GraphLayout
from kb.models import Bank, Entry, EntryStatus

POSITION_DTYPE = np.dtype(
    [("id", "<i8"), ("xyz", "<f4", (3,)), ("xy", "<f4", (2,)), ("community", "<i4")]
)
HIDDEN_STATUSES = (EntryStatus.MERGED, EntryStatus.DELETED)


def sync_max() -> int:
    """Largest bank (entries) whose first layout may be computed inside a request."""
    return settings.KB_LAYOUT_SYNC_MAX


def countdown_seconds() -> int:
    return settings.KB_LAYOUT_COUNTDOWN


def auto_refresh() -> bool:
    """Whether edits schedule a refresh job (default: only when a broker runs the jobs)."""
    value = settings.KB_LAYOUT_AUTO_REFRESH
    if value is None:
        return not settings.CELERY_TASK_ALWAYS_EAGER
    return bool(value)


def stale_after() -> dt.timedelta:
    """A mark older than this lost its job (a broker outage): the next request replaces it."""
    return dt.timedelta(seconds=max(600, 20 * countdown_seconds()))


@dataclass
class GraphRows:
    """A bank's drawable graph as plain rows: entries that are not merged or deleted, and the
    current edges between them."""

    nodes: list[tuple]  # (pk, short_id, title, kind, status)
    edges: list[tuple]  # (edge pk, from pk, to pk, relation, has_note, source)

    def fingerprint(self) -> str:
        """Hash of what the layout depends on: the node set and the undirected edge pairs."""
        return fingerprint_of([n[0] for n in self.nodes], [(e[1], e[2]) for e in self.edges])


def fingerprint_of(node_ids: list[int], pairs: list[tuple[int, int]]) -> str:
    """Hash of a node set and its undirected edge pairs (order and direction do not count)."""
    digest = hashlib.sha1()
    digest.update(np.sort(np.fromiter(node_ids, np.int64, len(node_ids))).tobytes())
    digest.update(b"|")
    if pairs:
        ends = np.array(pairs, dtype=np.int64)
        low, high = ends.min(axis=1), ends.max(axis=1)
        digest.update(np.unique(np.stack([low, high], axis=1), axis=0).tobytes())
    return digest.hexdigest()


def read_graph(bank: Bank) -> GraphRows:
    """Two statements: the bank's drawable entries, and its current edges between them."""
    nodes = list(
        Entry.objects.filter(bank=bank)
        .exclude(status__in=HIDDEN_STATUSES)
        .order_by("pk")
        .values_list("pk", "short_id", "title", "kind__name", "status")
    )
    edges = list(
        Edge.objects.filter(bank=bank)
        .filter(current_q())
        .exclude(from_entry__status__in=HIDDEN_STATUSES)
        .exclude(to_entry__status__in=HIDDEN_STATUSES)
        .order_by("pk")
        .values_list("pk", "from_entry_id", "to_entry_id", "type__name", "note", "source")
    )
    edges = [
        (pk, a, b, rel, bool(note and note.strip()), src) for pk, a, b, rel, note, src in edges
    ]
    return GraphRows(nodes, edges)


@dataclass
class LayoutBuild:
    """What a refresh produced."""

    bank: Bank
    nodes: int
    edges: int
    clusters: int
    took_ms: float

    def as_json(self) -> dict:
        return {
            "bank": self.bank.slug,
            "nodes": self.nodes,
            "edges": self.edges,
            "clusters": self.clusters,
            "took_ms": round(self.took_ms, 1),
        }


def refresh_layout(bank: Bank, rows: GraphRows | None = None) -> LayoutBuild:
    """Recompute the bank's layout from its current graph and replace the cached row.

    Clears the debounce mark before reading, so an edit made while this runs schedules
    another refresh instead of being lost.
    """
    started = time.perf_counter()
    GraphLayout.objects.filter(bank=bank).update(requested_at=None)
    rows = rows or read_graph(bank)
    layout = compute_layout([n[0] for n in rows.nodes], [(e[1], e[2]) for e in rows.edges])
    ids = [n[0] for n in rows.nodes]
    packed = pack_positions(layout, ids)
    took = (time.perf_counter() - started) * 1000
    GraphLayout.objects.update_or_create(
        bank=bank,
        defaults={
            "positions": packed.tobytes(),
            "fingerprint": rows.fingerprint(),
            "node_count": len(ids),
            "edge_count": len(rows.edges),
            "clusters": layout.clusters,
            "computed_at": timezone.now(),
            "took_ms": took,
        },
    )
    return LayoutBuild(bank, len(ids), len(rows.edges), layout.clusters, took)


def unpack_positions(row: GraphLayout | None) -> np.ndarray:
    """The cached records of a layout row (empty when there is none)."""
    if row is None or not row.is_computed or not row.positions:
        return np.zeros(0, dtype=POSITION_DTYPE)
    return np.frombuffer(bytes(row.positions), dtype=POSITION_DTYPE)


def request_layout(bank_pk: int) -> bool:
    """Mark the bank's layout for refresh and schedule the job, unless a mark already stands
    (then the scheduled job will see this edit too). Returns whether a job was scheduled."""
    from graph.analytics.tasks import refresh_layout_task

    now = timezone.now()
    GraphLayout.objects.get_or_create(bank_id=bank_pk)
    claimed = (
        GraphLayout.objects.filter(bank_id=bank_pk)
        .filter(Q(requested_at__isnull=True) | Q(requested_at__lt=now - stale_after()))
        .update(requested_at=now)
    )
    if not claimed:
        return False
    transaction.on_commit(
        lambda: refresh_layout_task.apply_async(
            (bank_pk, now.isoformat()), countdown=countdown_seconds()
        ),
        robust=True,
    )
    return True


def pack_positions(layout, ids: list[int]) -> np.ndarray:
    """The stored form of a layout's positions for ``ids`` (``POSITION_DTYPE`` rows; a node
    outside any community gets -1)."""
    packed = np.zeros(len(ids), dtype=POSITION_DTYPE)
    packed["id"] = ids
    if ids:
        packed["xyz"] = [layout.xyz[pk] for pk in ids]
        packed["xy"] = [layout.xy[pk] for pk in ids]
        packed["community"] = [
            -1 if layout.community.get(pk) is None else layout.community[pk] for pk in ids
        ]
    return packed


def run_requested(bank_pk: int, requested_at: str | None = None) -> str:
    """The job's body. Idempotent: a second delivery finds a layout computed after the
    request and does nothing."""
    bank = Bank.objects.filter(pk=bank_pk).first()
    if bank is None:
        return "bank gone"
    if requested_at:
        since = dt.datetime.fromisoformat(requested_at)
        row = GraphLayout.objects.filter(bank=bank).first()
        if row and row.requested_at is None and row.computed_at and row.computed_at >= since:
            return "already up to date"
    from kb.services.job_progress import tracked_job

    with tracked_job(bank, "layout", actor="celery:layout") as (job, progress):
        progress.phase("laying out", total=1)
        built = refresh_layout(bank)
        from graph.analytics.view_cache import warm_views

        warm_views(bank)  # a bank too large to draw whole: its overview and largest communities
        job.result = {"nodes": built.nodes, "edges": built.edges, "took_ms": round(built.took_ms)}
        progress(1, 1)
    return f"layout of {built.nodes} nodes, {built.edges} edges in {built.took_ms:.0f} ms"


# --- edits schedule a refresh -----------------------------------------------------------------


def bank_changed(sender, event, **kwargs) -> None:
    """``kb.events.bank_changed`` subscriber: a committed write that changed entries or edges
    drops its bank's cached community overview and requests one refresh of its layout."""
    if not event.touches(Entry, Edge):
        return
    from graph.analytics.view_cache import drop_overviews

    drop_overviews({event.bank_id})
    if auto_refresh():
        request_layout(event.bank_id)


def connect_signals() -> None:
    """Called from ``GraphConfig.ready``: committed edits of entries and edges request a
    refresh (one subscription, whichever path wrote the rows)."""
    from kb.events import bank_changed as committed

    committed.connect(bank_changed, dispatch_uid="graph.layout.bank_changed")
