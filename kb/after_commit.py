"""Collect ids touched during a transaction and act on them once, after it commits.

Derived state (workflow reports, graph layouts) is refreshed after edits. One edit can touch
many rows, and one transaction many edits: each receiver adds ids to one batch per
transaction and connection, and the batch is flushed once, after commit (a rollback discards
the queue, and with it the batch). Outside a transaction the ids are flushed after the
autocommit, each call on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.db import transaction


class _Batch:
    def __init__(self, flush: Callable[[set[int]], None]) -> None:
        self.ids: set[int] = set()
        self.flush = flush
        self.position = -1
        self.flushed = False

    def __call__(self) -> None:
        self.flushed = True
        self.flush(self.ids)


def collect_after_commit(
    name: str, ids: Iterable[int | None], flush: Callable[[set[int]], None], using: str = "default"
) -> None:
    """Add ``ids`` to the ``name`` batch of the current transaction; ``flush(ids)`` runs once
    after it commits."""
    ids = {pk for pk in ids if pk is not None}
    if not ids:
        return
    conn = transaction.get_connection(using)
    if not conn.in_atomic_block:
        transaction.on_commit(lambda: flush(ids), using=using, robust=True)
        return
    # Reuse the batch while it is still queued on this connection.
    attr = f"_after_commit_{name}"
    batch = getattr(conn, attr, None)
    hooks = conn.run_on_commit
    if (
        batch is None
        or batch.flushed
        or batch.position >= len(hooks)
        or hooks[batch.position][1] is not batch
    ):
        batch = _Batch(flush)
        transaction.on_commit(batch, using=using, robust=True)
        batch.position = len(conn.run_on_commit) - 1
        setattr(conn, attr, batch)
    batch.ids |= ids
