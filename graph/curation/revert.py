"""Exact reverts of any audited operation, and the row-level changes an operation made."""

from __future__ import annotations

from dataclasses import dataclass

from graph.curation.setwise_revert import (
    apply_revert,
    audited_models,
    blocking_operations,
    plan_revert,
    touched_entries,
)
from graph.edges.links import _require_reason, lock_entries
from graph.models import EdgeProposal, EdgeProposalStatus, MergeProposal, ProposalStatus
from kb import audit
from kb.errors import Conflict, NotFound
from kb.inputs import parse_int_id
from kb.models import Bank, Operation, OperationKind
from kb.unit_of_work import unit_of_work


def _audited_models():
    return audited_models()


def _tracked_fields(model) -> list[str]:
    return [f.attname for f in model.history.model.tracked_fields]


def revert_plan(op: Operation) -> tuple[list[tuple], list[dict]]:
    """What reverting ``op`` would do, read-only: for every row it touched, (model, id, the
    historical row just before the operation or None if the operation created it, the
    operation's last historical row); and the rows whose present state a later operation
    still holds (conflicts, each naming those operations). A constant number of queries."""
    plan = plan_revert(op)
    return [(p.model, p.id, p.prior, p.last) for p in plan.rows], plan.conflicts


@dataclass
class RevertResult:
    operation: Operation  # the new ``revert`` operation
    reverted: Operation
    rows: int

    def as_json(self) -> dict:
        return {"operation": self.operation.pk, "reverted": self.reverted.pk, "rows": self.rows}


def get_operation(bank: Bank, op_id) -> Operation:
    try:
        return Operation.objects.get(bank=bank, pk=parse_int_id(op_id, "op_id"))
    except Operation.DoesNotExist:
        raise NotFound(
            f"No operation {op_id!r} in this bank.", code="operation_not_found"
        ) from None


def revert_operation(
    bank: Bank, op_id, reason: str, *, force: bool = False, actor: str | None = None
) -> RevertResult:
    """Undo an operation exactly: restore every row it touched to its state just before it,
    delete rows it created, recreate rows it deleted — in one transaction, as a new
    ``revert`` operation, in a constant number of statements. Refuses (409
    ``revert_conflict``) while a later operation's change to the same rows is still in place,
    unless ``force``; the refusal names the operations to revert first, in order."""
    reason = _require_reason(reason)
    op = get_operation(bank, op_id)
    if op.kind == OperationKind.REVOKE_TOKEN:
        raise Conflict(
            f"Operation {op.pk} revoked agent tokens, and a revocation is final; "
            "create a new token instead.",
            code="not_revertible",
        )
    if op.reverted_by_id is not None:
        raise Conflict(
            f"Operation {op.pk} was already reverted by operation {op.reverted_by_id}.",
            code="already_reverted",
        )

    with unit_of_work(
        bank, OperationKind.REVERT, reason=reason, actor=actor, reverts=op.pk
    ) as new_op:
        # Plan inside the transaction, with the reverted operation and every entry it touched
        # locked, so nothing can change those rows between the conflict check and the restore.
        op = Operation.objects.select_for_update().get(pk=op.pk)
        if op.reverted_by_id is not None:
            raise Conflict(f"Operation {op.pk} was already reverted.", code="already_reverted")
        lock_entries(touched_entries(op), exclusive=True)
        plan = plan_revert(op)
        if plan.conflicts and not force:
            first = blocking_operations(op, plan)
            order = ", ".join(str(o) for o in first) or "none found"
            raise Conflict(
                f"{len(plan.conflicts)} row(s) changed by operation {op.pk} were changed "
                f"again later; revert operations {order} first (in that order), or force.",
                code="revert_conflict",
                extra={"rows": plan.conflicts, "operations": first},
            )
        apply_revert(plan)
        op.reverted_by = new_op
        op.save(update_fields=["reverted_by"])
        reopened = reopen_decided_proposals(op, new_op)
        audit.record(
            new_op,
            reverted=op.pk,
            rows=len(plan.rows),
            forced=bool(plan.conflicts),
            **({"reopened_proposals": reopened} if reopened else {}),
        )
    return RevertResult(new_op, op, len(plan.rows))


def reopen_decided_proposals(op: Operation, revert_op: Operation) -> dict[str, list[int]]:
    """Proposals whose acceptance ``op`` was (edge proposals it accepted, merge proposals it
    approved) go back to the review queue: the edges or the merge they caused are undone, so
    the question is open again."""
    note = f"reopened: operation {op.pk} was reverted by operation {revert_op.pk}"
    edge_ids = list(
        EdgeProposal.objects.filter(operation=op, status=EdgeProposalStatus.ACCEPTED).values_list(
            "pk", flat=True
        )
    )
    EdgeProposal.objects.filter(pk__in=edge_ids).update(
        status=EdgeProposalStatus.OPEN,
        edge=None,
        operation=None,
        decided_by="",
        decided_at=None,
        decision_reason=note,
    )
    merge_ids = list(
        MergeProposal.objects.filter(operation=op, status=ProposalStatus.APPROVED).values_list(
            "pk", flat=True
        )
    )
    MergeProposal.objects.filter(pk__in=merge_ids).update(
        status=ProposalStatus.PENDING, operation=None, decided_by="", decided_at=None
    )
    return {name: ids for name, ids in (("edge", edge_ids), ("merge", merge_ids)) if ids}


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
