"""Who, why and which operation: carried into every history row written during a change.

A context variable holds the current :class:`AuditContext`. Request middleware sets the actor
for staff sessions, the API sets it for agent tokens, Celery tasks and management commands
set it explicitly. The unit of work (:mod:`kb.unit_of_work`) opens an audited changeset and binds
it here (:func:`within`); :func:`history_stamp` is the one rule for a historical row's audit
columns, whichever path writes the row.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class AuditContext:
    actor: str = "system"
    reason: str = ""
    operation_id: int | None = None
    bank_id: int | None = None  # the open operation's bank


_current: contextvars.ContextVar[AuditContext] = contextvars.ContextVar(
    "kb_audit_context",
    default=AuditContext(),  # noqa: B039 (frozen, immutable)
)


def current() -> AuditContext:
    return _current.get()


@contextlib.contextmanager
def acting_as(actor: str, reason: str = "") -> Iterator[AuditContext]:
    """Attribute every change inside the block to ``actor``."""
    token = _current.set(
        replace(_current.get(), actor=actor, reason=reason or _current.get().reason)
    )
    try:
        yield _current.get()
    finally:
        _current.reset(token)


@contextlib.contextmanager
def restored() -> Iterator[None]:
    """Whatever the block sets with :func:`rebind`, the context before it comes back when
    the block ends, by return or by exception (a request's actor never outlives it)."""
    token = _current.set(_current.get())
    try:
        yield
    finally:
        _current.reset(token)


def rebind(actor: str) -> None:
    """Attribute the rest of the enclosing :func:`restored` block's changes to ``actor`` (for
    a caller known only part-way through the block, as a request after authentication)."""
    _current.set(replace(_current.get(), actor=actor))


@contextlib.contextmanager
def within(op) -> Iterator[AuditContext]:
    """Bind the audit context to the open operation ``op`` (its id, bank, actor and reason):
    every history row written inside the block records it. Used by the unit of work."""
    token = _current.set(
        replace(
            _current.get(),
            operation_id=op.pk,
            bank_id=op.bank_id,
            actor=op.actor,
            reason=op.reason,
        )
    )
    try:
        yield _current.get()
    finally:
        _current.reset(token)


@contextlib.contextmanager
def operation(bank, kind: str, reason: str = "", actor: str | None = None, **details):
    """The unit of work under its older name: :func:`kb.unit_of_work.unit_of_work`."""
    from kb.unit_of_work import unit_of_work

    with unit_of_work(bank, kind, reason=reason, actor=actor, **details) as op:
        yield op


def record(op, **details) -> None:
    """Merge ``details`` into the operation's details (joined operations share one row)."""
    op.details = {**(op.details or {}), **details}
    op.save(update_fields=["details"])


# simple-history's history_change_reason column is varchar(100); the full reason stays on the
# operation row (Operation.reason is text).
HISTORY_REASON_MAX = 100


def history_reason(reason: str | None) -> str | None:
    """The reason as a historical row stores it: cut to the column, None when empty."""
    return reason[:HISTORY_REASON_MAX] if reason else None


def history_stamp(reason: str | None = None) -> dict:
    """The audit columns of a historical row, one rule per column whichever path writes it
    (simple-history's per-row saves through :func:`fill_history_row`, the set-wise
    ``kb.history_rows.record_rows``): the open operation, the actor, and the row's own reason
    (else the context's) cut to the column."""
    ctx = _current.get()
    return {
        "operation_id": ctx.operation_id,
        "history_actor": ctx.actor,
        "history_change_reason": history_reason(reason or ctx.reason),
    }


def fill_history_row(sender, instance, history_instance, **kwargs) -> None:
    """simple-history signal: stamp the audit context onto each historical row."""
    stamp = history_stamp(getattr(history_instance, "history_change_reason", None))
    for column, value in stamp.items():
        setattr(history_instance, column, value)


class AuditContextMiddleware:
    """Attribute changes made through staff sessions (admin, pages) to the staff user."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            with acting_as(f"staff:{user.get_username()}"):
                return self.get_response(request)
        return self.get_response(request)
