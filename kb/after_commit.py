"""One batch per transaction, run once after it commits.

A write can note what it changed many times inside one transaction (a merge saves and updates
hundreds of rows); what follows the commit should run once, with everything. :func:`batch_for`
hands back the batch queued on the current transaction of the connection, queuing a fresh one
when there is none yet (or when the savepoint that queued the last one was rolled back, which
took it off the queue). A rollback discards the queue, and with it the batch. Outside a
transaction the batch runs right after the autocommit, on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.db import transaction


class Batch:
    """What a transaction collected; :meth:`flush` runs once, after the commit."""

    def __init__(self) -> None:
        self.position = -1
        self.flushed = False

    def flush(self) -> None:  # pragma: no cover - subclasses say what a flush does
        raise NotImplementedError

    def __call__(self) -> None:
        self.flushed = True
        self.flush()


B = TypeVar("B", bound=Batch)


def batch_for(name: str, make: Callable[[], B], using: str = "default") -> B:
    """The ``name`` batch of the current transaction on ``using`` (made by ``make`` and queued
    with ``on_commit`` if none is queued). Outside a transaction, a fresh batch each call: the
    caller fills it and it runs once the autocommit has happened (see :func:`run_if_idle`)."""
    conn = transaction.get_connection(using)
    if not conn.in_atomic_block:
        return make()
    attr = f"_after_commit_{name}"
    batch = getattr(conn, attr, None)
    hooks = conn.run_on_commit
    if (
        batch is None
        or batch.flushed
        or batch.position >= len(hooks)
        or hooks[batch.position][1] is not batch
    ):
        batch = make()
        transaction.on_commit(batch, using=using, robust=True)
        batch.position = len(conn.run_on_commit) - 1
        setattr(conn, attr, batch)
    return batch


def run_if_idle(batch: Batch, using: str = "default") -> None:
    """Run a batch filled outside any transaction (its write has committed already)."""
    if not transaction.get_connection(using).in_atomic_block and not batch.flushed:
        transaction.on_commit(batch, using=using, robust=True)
