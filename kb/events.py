"""The post-commit event: what one committed write changed in one bank.

Every write runs in a unit of work (:mod:`kb.unit_of_work`); whichever path wrote the rows
(a ``save()``, a ``COPY``, an ``UPDATE … FROM``), the unit of work collects the changed rows
and, after the transaction commits, sends :data:`bank_changed` once per bank it touched (a
write touches one bank, so once per commit). A rolled-back write sends nothing.

Derived state subscribes here, once: the workflow scheduler (``workflows.apps``) and the
layout cache (``graph.apps``). A subscriber reads ids, not instances, and does its own reads
after the commit; one that raises is logged and does not stop the others.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.dispatch import Signal

logger = logging.getLogger(__name__)

# sender: BankChanged; kwargs: event (a BankChanged)
bank_changed = Signal()

ADDED, CHANGED, REMOVED = "+", "~", "-"


@dataclass(frozen=True)
class BankChanged:
    """One bank's rows changed by one committed transaction.

    ``rows`` maps ``(model label, change)`` — label as ``"kb.entry"``, change one of ``+``,
    ``~``, ``-`` — to the primary keys written. ``operation_ids`` are the operations the
    transaction opened in this bank (none for a write outside any operation)."""

    bank_id: int
    rows: dict[tuple[str, str], frozenset[int]] = field(default_factory=dict)
    operation_ids: tuple[int, ...] = ()

    def ids(self, model, change: str | None = None) -> frozenset[int]:
        """The primary keys of ``model`` this write changed (of one ``change`` kind, or all)."""
        label = model._meta.label_lower
        found: set[int] = set()
        for (name, kind), ids in self.rows.items():
            if name == label and (change is None or kind == change):
                found |= ids
        return frozenset(found)

    @property
    def kinds(self) -> frozenset[tuple[str, str]]:
        """The kinds of change in this write: ``(model label, change)`` pairs."""
        return frozenset(self.rows)

    def touches(self, *models) -> bool:
        labels = {m._meta.label_lower for m in models}
        return any(name in labels for name, _ in self.rows)


def publish(event: BankChanged) -> None:
    """Deliver ``event`` to every subscriber; one that fails is logged, the others still run."""
    for receiver, outcome in bank_changed.send_robust(sender=BankChanged, event=event):
        if isinstance(outcome, Exception):
            logger.error(
                "bank_changed subscriber %s failed for bank %s",
                getattr(receiver, "__qualname__", receiver),
                event.bank_id,
                exc_info=outcome,
            )
