"""Who, why and which operation: carried into every history row written during a change.

A context variable holds the current :class:`AuditContext`. Request middleware sets the actor
for staff sessions, the API sets it for agent tokens, Celery tasks and management commands
set it explicitly. :func:`operation` opens an audited changeset: it creates the ``Operation``
row and every historical row saved inside the block records it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, replace

from django.db import transaction


@dataclass(frozen=True)
class AuditContext:
    actor: str = "system"
    reason: str = ""
    operation_id: int | None = None


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
def operation(bank, kind: str, reason: str = "", actor: str | None = None, **details):
    """Open one audited changeset inside one transaction and yield its ``Operation``.

    Everything written in the block is one unit: it commits together or not at all, and every
    historical row records the operation id. Inside an open operation, joins it.
    """
    from kb.models import Operation

    ctx = _current.get()
    if ctx.operation_id is not None:
        # Already inside an operation (a merge that links, an import that creates): join it,
        # so one user action stays one reviewable, revertible unit.
        with transaction.atomic():
            yield Operation.objects.get(pk=ctx.operation_id)
        return
    from config.serving import context

    request = context.current()
    with transaction.atomic():
        op = Operation.objects.create(
            bank=bank,
            kind=kind,
            actor=actor or ctx.actor,
            reason=reason or ctx.reason,
            details=details or {},
            request_id=request.request_id if request is not None else "",
        )
        token = _current.set(replace(ctx, operation_id=op.pk, actor=op.actor, reason=op.reason))
        try:
            yield op
        finally:
            _current.reset(token)


def record(op, **details) -> None:
    """Merge ``details`` into the operation's details (joined operations share one row)."""
    op.details = {**(op.details or {}), **details}
    op.save(update_fields=["details"])


# simple-history's history_change_reason column is varchar(100); the full reason stays on the
# operation row (Operation.reason is text).
HISTORY_REASON_MAX = 100


def history_reason(reason: str | None) -> str | None:
    """The reason as a historical row stores it, on every path (simple-history's per-row saves
    and the set-wise ``record_rows``): cut to the column, None when empty."""
    return reason[:HISTORY_REASON_MAX] if reason else None


def fill_history_row(sender, instance, history_instance, **kwargs) -> None:
    """simple-history signal: stamp the audit context onto each historical row."""
    ctx = _current.get()
    history_instance.operation_id = ctx.operation_id
    history_instance.history_actor = ctx.actor
    history_instance.history_change_reason = history_reason(
        getattr(history_instance, "history_change_reason", None) or ctx.reason
    )


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
