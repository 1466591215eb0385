"""One unit of work per write, per row or set-wise.

``with unit_of_work(bank, kind, reason=…, actor=…) as op:`` opens the transaction, creates the
:class:`~kb.models.Operation` (actor, reason, the request id of ``config.serving.context``)
and binds it to the audit context, so every historical row written inside — by
simple-history on a ``save()`` or by ``kb.history_rows`` set-wise — is stamped by the one
rule of :func:`kb.audit.history_stamp`. Inside an open unit, a nested one joins it: one user
action stays one reviewable, revertible operation.

The unit also collects what changed: per-row saves and deletes of audited models through
``post_save``/``post_delete`` (connected once, in ``kb.apps``), set-wise writes through
:func:`note_rows` (called by ``record_rows``). After the transaction commits, one
:class:`kb.events.BankChanged` per bank is published (:func:`kb.events.publish`); a rollback
publishes nothing. Saves that only move bookkeeping fields (usage counters, verification
stamps) are not changes derived state depends on and are left out.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
from collections import defaultdict
from collections.abc import Iterable

from django.db import transaction

from kb import audit
from kb.after_commit import Batch, batch_for, run_if_idle
from kb.events import BankChanged, publish

# Fields whose change alone is not an edit of the row (no event).
BOOKKEEPING_FIELDS = frozenset({"usage_count", "last_used_at", "verified_at", "verified_by"})

_BATCH = "bank_changed"


class Changes(Batch):
    """The rows one transaction changed, by bank; published after the commit."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[int, dict[tuple[str, str], set[int]]] = defaultdict(
            lambda: defaultdict(set)
        )
        self.operations: dict[int, list[int]] = defaultdict(list)

    def events(self) -> list[BankChanged]:
        banks = sorted(set(self.rows) | set(self.operations))
        return [
            BankChanged(
                bank_id=bank_id,
                rows={key: frozenset(ids) for key, ids in self.rows.get(bank_id, {}).items()},
                operation_ids=tuple(self.operations.get(bank_id, ())),
            )
            for bank_id in banks
        ]

    def flush(self) -> None:
        for event in self.events():
            publish(event)


def _changes(using: str) -> Changes:
    return batch_for(_BATCH, Changes, using=using)


def note_rows(
    model,
    ids: Iterable[int | None],
    change: str,
    *,
    bank_id: int | None = None,
    using: str = "default",
) -> None:
    """Record that rows ``ids`` of ``model`` were written (``change``: ``+``, ``~`` or ``-``)
    in the current transaction. The bank is the open operation's unless given; outside any
    operation it is read from the rows (so call it before a delete)."""
    ids = {pk for pk in ids if pk is not None}
    if not ids:
        return
    label = model._meta.label_lower
    if bank_id is None:
        bank_id = audit.current().bank_id
    by_bank: dict[int, set[int]] = defaultdict(set)
    if bank_id is not None:
        by_bank[bank_id] = ids
    else:
        rows = model._default_manager.using(using).filter(pk__in=ids)
        for pk, bank in rows.values_list("pk", "bank_id"):
            by_bank[bank].add(pk)
    batch = _changes(using)
    for bank, bank_ids in by_bank.items():
        batch.rows[bank][(label, change)] |= bank_ids
    run_if_idle(batch, using)


def start_operation(
    bank,
    kind: str,
    *,
    actor: str,
    reason: str = "",
    details: dict | None = None,
    created_at: dt.datetime | None = None,
):
    """Create the ``Operation`` row of a write, stamped with the request it serves, and note
    it on the request's log context and the transaction's event. Joins nothing: see
    :func:`unit_of_work`."""
    from config.serving import context as serving
    from kb.models import Operation

    info = serving.current()
    fields = {"created_at": created_at} if created_at is not None else {}
    op = Operation.objects.create(
        bank=bank,
        kind=kind,
        actor=actor,
        reason=reason,
        details=details or {},
        request_id=info.request_id if info is not None else "",
        **fields,
    )
    serving.note_operation(op.pk)
    batch = _changes("default")
    batch.operations[op.bank_id].append(op.pk)
    run_if_idle(batch, "default")
    return op


@contextlib.contextmanager
def unit_of_work(bank, kind: str, reason: str = "", actor: str | None = None, **details):
    """Run one write: one transaction, one ``Operation`` (yielded), every history row stamped
    with it, one ``BankChanged`` event after the commit. Inside an open unit, joins it (the
    enclosing operation is yielded)."""
    from kb.models import Operation

    ctx = audit.current()
    if ctx.operation_id is not None:
        with transaction.atomic():
            yield Operation.objects.get(pk=ctx.operation_id)
        return
    with transaction.atomic():
        op = start_operation(
            bank, kind, actor=actor or ctx.actor, reason=reason or ctx.reason, details=details
        )
        with audit.within(op):
            yield op


# --- per-row writes: the model signals of audited models ------------------------------------


@functools.cache
def _audited(model) -> bool:
    """A model whose rows carry history and belong to a bank (entries, edges, aliases)."""
    has_history = getattr(model._meta, "simple_history_manager_attribute", None) is not None
    return has_history and any(f.attname == "bank_id" for f in model._meta.concrete_fields)


def row_saved(
    sender, instance, created: bool = False, raw: bool = False, update_fields=None, **kwargs
) -> None:
    """``post_save``: note an audited row (not a fixture load, not a bookkeeping-only save)."""
    if raw or not _audited(sender):
        return
    if update_fields is not None and set(update_fields) <= BOOKKEEPING_FIELDS:
        return
    note_rows(
        sender,
        [instance.pk],
        "+" if created else "~",
        bank_id=instance.bank_id,
        using=kwargs.get("using") or instance._state.db or "default",
    )


def row_deleted(sender, instance, **kwargs) -> None:
    """``post_delete``: note an audited row deleted one by one."""
    if _audited(sender):
        note_rows(
            sender,
            [instance.pk],
            "-",
            bank_id=instance.bank_id,
            using=kwargs.get("using") or "default",
        )


def connect_row_signals() -> None:
    """Called once from ``KbConfig.ready`` (every model is loaded by then): connect the audited
    models only, so every other model keeps Django's fast delete (a ``post_delete`` receiver
    makes a model's deletes fetch its rows first)."""
    from django.apps import apps
    from django.db.models.signals import post_delete, post_save

    for model in apps.get_models():
        if _audited(model):
            label = model._meta.label_lower
            post_save.connect(row_saved, sender=model, dispatch_uid=f"kb.uow.saved.{label}")
            post_delete.connect(row_deleted, sender=model, dispatch_uid=f"kb.uow.deleted.{label}")


def pending_events(using: str = "default") -> list[BankChanged]:
    """The events the current transaction would publish if it committed now (for tests and
    diagnostics)."""
    conn = transaction.get_connection(using)
    batch = getattr(conn, f"_after_commit_{_BATCH}", None)
    if batch is None or batch.flushed or not conn.in_atomic_block:
        return []
    return batch.events()
