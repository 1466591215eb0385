"""Exact reverts of any audited operation, and the row-level changes an operation made."""

from __future__ import annotations

from dataclasses import dataclass

from graph.edges.links import _require_reason, lock_entries
from graph.models import Alias, Edge
from kb import audit
from kb.errors import Conflict, NotFound
from kb.models import Bank, Entry, Operation, OperationKind


# Models whose historical rows carry operation ids, in the order rows are restored (parents
# first); deletions run in the reverse order.
def _audited_models():
    return [Entry, Edge, Alias]


def _tracked_fields(model) -> list[str]:
    return [f.attname for f in model.history.model.tracked_fields]


def revert_plan(op: Operation) -> tuple[list[tuple], list[dict]]:
    """What reverting ``op`` would do, read-only: for every row it touched, (model, id, the
    historical row just before the operation or None if the operation created it, the
    operation's last historical row); and the rows a later operation changed (conflicts).
    Two queries per audited model, whatever the operation's size."""
    plans, conflicts = [], []
    for model in _audited_models():
        hist = model.history.model
        rows = list(hist.objects.filter(operation_id=op.pk).order_by("history_id"))
        if not rows:
            continue
        by_object: dict[int, list] = {}
        for row in rows:
            by_object.setdefault(row.id, []).append(row)
        timeline: dict[int, list] = {}
        for row in hist.objects.filter(id__in=list(by_object)).order_by("id", "history_id"):
            timeline.setdefault(row.id, []).append(row)
        for obj_id, obj_rows in by_object.items():
            first, last = obj_rows[0].history_id, obj_rows[-1].history_id
            before = [r for r in timeline[obj_id] if r.history_id < first]
            after = [r for r in timeline[obj_id] if r.history_id > last and r.operation_id != op.pk]
            if after:
                conflicts.append(
                    {
                        "model": model.__name__.lower(),
                        "id": obj_id,
                        "operation": after[0].operation_id,
                        "changed_at": after[0].history_date.isoformat(),
                    }
                )
            plans.append((model, obj_id, before[-1] if before else None, obj_rows[-1]))
    return plans, conflicts


@dataclass
class RevertResult:
    operation: Operation  # the new ``revert`` operation
    reverted: Operation
    rows: int

    def as_json(self) -> dict:
        return {"operation": self.operation.pk, "reverted": self.reverted.pk, "rows": self.rows}


def get_operation(bank: Bank, op_id) -> Operation:
    try:
        return Operation.objects.get(bank=bank, pk=int(op_id))
    except (TypeError, ValueError, Operation.DoesNotExist):
        raise NotFound(
            f"No operation {op_id!r} in this bank.", code="operation_not_found"
        ) from None


def revert_operation(
    bank: Bank, op_id, reason: str, *, force: bool = False, actor: str | None = None
) -> RevertResult:
    """Undo an operation exactly: restore every row it touched to its state just before it,
    delete rows it created, recreate rows it deleted — in one transaction, as a new
    ``revert`` operation. Refuses (409 ``revert_conflict``) when a later operation changed
    the same rows, unless ``force``."""
    reason = _require_reason(reason)
    op = get_operation(bank, op_id)
    if op.reverted_by_id is not None:
        raise Conflict(
            f"Operation {op.pk} was already reverted by operation {op.reverted_by_id}.",
            code="already_reverted",
        )

    with audit.operation(
        bank, OperationKind.REVERT, reason=reason, actor=actor, reverts=op.pk
    ) as new_op:
        # Plan inside the transaction, with the reverted operation and every entry it touched
        # locked, so nothing can change those rows between the conflict check and the restore.
        op = Operation.objects.select_for_update().get(pk=op.pk)
        if op.reverted_by_id is not None:
            raise Conflict(f"Operation {op.pk} was already reverted.", code="already_reverted")
        plans, conflicts = revert_plan(op)
        touched = {obj_id for model, obj_id, _, _ in plans if model is Entry}
        touched |= {
            end
            for model, _, prior, last in plans
            if model is Edge
            for end in (last.from_entry_id, last.to_entry_id)
        }
        lock_entries(touched, exclusive=True)
        plans, conflicts = revert_plan(op)
        if conflicts and not force:
            raise Conflict(
                f"{len(conflicts)} row(s) changed by operation {op.pk} were changed again "
                "later; revert those operations first or force.",
                code="revert_conflict",
                extra={"rows": conflicts},
            )
        # 1. Remove rows the operation created (children first; history records each delete).
        for model in reversed(_audited_models()):
            created = [obj_id for m, obj_id, prior, _ in plans if m is model and prior is None]
            if created:
                model.objects.filter(pk__in=created).delete()
        # 2. Restore every other row to its prior state (parents first); closing rows first
        #    keeps the one-believed-row rule satisfied while rows are reopened.
        restores = [p for p in plans if p[2] is not None]
        restores.sort(
            key=lambda p: (
                _audited_models().index(p[0]),
                getattr(p[2], "invalidated_at", None) is None,
            )
        )
        current = {
            model: model.objects.in_bulk([p[1] for p in restores if p[0] is model])
            for model in _audited_models()
        }
        for model, obj_id, prior, _ in restores:
            obj = current[model].get(obj_id) or model(pk=obj_id)
            for name in _tracked_fields(model):
                setattr(obj, name, getattr(prior, name))
            obj.save()
        op.reverted_by = new_op
        op.save(update_fields=["reverted_by"])
        audit.record(new_op, reverted=op.pk, rows=len(plans), forced=bool(conflicts))
    return RevertResult(new_op, op, len(plans))


def operation_changes(op: Operation) -> list[dict]:
    """Every row an operation wrote, with its state before and after."""
    changes = []
    for model in _audited_models():
        hist = model.history.model
        fields = _tracked_fields(model)
        for row in hist.objects.filter(operation_id=op.pk).order_by("history_id"):
            prior = (
                hist.objects.filter(id=row.id, history_id__lt=row.history_id)
                .order_by("-history_id")
                .first()
            )

            changes.append(
                {
                    "model": model.__name__.lower(),
                    "id": row.id,
                    "change": {"+": "created", "~": "changed", "-": "deleted"}[row.history_type],
                    "before": _snapshot(prior, fields),
                    "after": _snapshot(row, fields),
                }
            )
    return changes


def _snapshot(row, fields: list[str]) -> dict | None:
    if row is None or row.history_type == "-":
        return None
    return {f: _jsonable(getattr(row, f)) for f in fields}


def _jsonable(value):
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value
