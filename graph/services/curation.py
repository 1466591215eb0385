"""Curation: merges, deletions that bridge, and exact reverts of any operation."""

from __future__ import annotations

from dataclasses import dataclass, field

from graph.curation.setwise_delete import apply_delete
from graph.curation.setwise_merge import apply_merge
from graph.curation.setwise_revert import (
    apply_revert,
    audited_models,
    blocking_operations,
    plan_revert,
    touched_entries,
)
from graph.models import Edge
from graph.services.edges import (
    LinkRequest,
    _require_reason,
    lock_entries,
    write_edge,
)
from graph.services.vocab import edge_types_for_bank
from kb import audit
from kb.errors import Conflict, InvalidInput, NotFound
from kb.models import Bank, Entry, EntryStatus, Operation, OperationKind
from kb.services.entries import find_entry

# --- merge ----------------------------------------------------------------------------------


def uncovered_interval(lo, hi, believed: list[tuple]) -> tuple | None:
    """The part of the valid interval [lo, hi) (None = unbounded) not covered by the
    ``believed`` intervals of the same triple, trimmed from the ends; None when nothing is
    left. (Bank edges are sparse in time: one contiguous remainder is what matters.)"""
    for _ in range(len(believed) + 1):
        clash = next(
            (
                (f, t)
                for f, t in believed
                if (t is None or lo is None or lo < t) and (hi is None or f is None or f < hi)
            ),
            None,
        )
        if clash is None:
            return lo, hi
        c_from, c_to = clash
        if c_to is not None and (hi is None or c_to < hi) and (lo is None or lo < c_to):
            lo = c_to  # covered up to the clash's end: start there
        elif c_from is not None and (lo is None or c_from > lo):
            hi = c_from  # the clash starts later: end where it starts
        else:
            return None
        if lo is not None and hi is not None and lo >= hi:
            return None
    return None


def write_preserving(bank: Bank, req: LinkRequest, *, replaces: Edge | None = None) -> Edge | None:
    """Write ``req`` unless the same triple is already current (then None: it collapses into
    that edge). When the triple is believed only for another valid interval (an edge that
    ended, or starts later), the new row is trimmed to the time not yet covered, so the
    connection survives without two overlapping beliefs."""
    believed = list(
        Edge.objects.filter(
            from_entry=req.from_entry,
            to_entry=req.to_entry,
            type=req.type,
            invalidated_at__isnull=True,
        )
    )
    if any(e.is_current() for e in believed):
        return None
    interval = uncovered_interval(
        req.valid_from, req.valid_to, [(e.valid_from, e.valid_to) for e in believed]
    )
    if interval is None:
        return None
    req.valid_from, req.valid_to = interval
    return write_edge(bank, req, replaces=replaces)


@dataclass
class MergeResult:
    operation: Operation
    keep: Entry
    away: Entry
    edges_repointed: int
    edges_collapsed: int
    aliases_added: int
    self_loops_dropped: list[int]
    collapsed: list[dict] = field(default_factory=list)  # each collapsed edge, both notes

    def as_json(self) -> dict:
        return {
            "operation": self.operation.pk,
            "keep": self.keep.short_id,
            "away": self.away.short_id,
            "edges_repointed": self.edges_repointed,
            "edges_collapsed": self.edges_collapsed,
            "aliases_added": self.aliases_added,
            "self_loops_dropped": self.self_loops_dropped,
            "collapsed_edges": self.collapsed,
        }


def _mergeable(bank: Bank, ref: str, field: str) -> Entry:
    if not isinstance(ref, str) or not ref.strip():
        raise InvalidInput(
            f"{field} must be an entry id.", code="invalid_merge", fields={field: "Required."}
        )
    entry = find_entry(bank, ref, follow_merges=False)
    if entry.status == EntryStatus.MERGED:
        raise Conflict(
            f"Entry {ref!r} was already merged into another entry.", code="already_merged"
        )
    return entry


def merge_entries(
    bank: Bank, keep_ref: str, away_ref: str, reason: str, *, actor: str | None = None
) -> MergeResult:
    """Merge ``away`` into ``keep``: re-point every believed edge of ``away`` (duplicates
    collapse; would-be self-loops are recorded and dropped), turn its id, key and aliases into
    aliases of ``keep``, mark it merged. One ``merge`` operation, exactly revertible."""
    reason = _require_reason(reason)
    keep = _mergeable(bank, keep_ref, "keep")
    away = _mergeable(bank, away_ref, "away")
    if keep.pk == away.pk:
        raise InvalidInput(
            "keep and away are the same entry.",
            code="invalid_merge",
            fields={"away": "Same as keep."},
        )
    with audit.operation(bank, OperationKind.MERGE, reason=reason, actor=actor) as op:
        lock_entries([keep.pk, away.pk], exclusive=True)
        keep = Entry.objects.select_related("kind").get(pk=keep.pk)
        away = Entry.objects.select_related("kind").get(pk=away.pk)
        for entry in (keep, away):  # re-check now that nobody else can change them
            if entry.status in (EntryStatus.MERGED, EntryStatus.DELETED):
                raise Conflict(
                    f"Entry {entry.short_id} was {entry.status} meanwhile.",
                    code=f"already_{entry.status}",
                )
        written = apply_merge(bank, keep, away, op)
        result = MergeResult(
            op,
            keep,
            away,
            written.repointed,
            len(written.collapsed),
            written.aliases_added,
            written.self_loops,
            written.collapsed,
        )
        audit.record(op, **{k: v for k, v in result.as_json().items() if k != "operation"})
    return result


# --- delete with bridging -------------------------------------------------------------------


def delete_entry(bank: Bank, ref: str, reason: str, *, actor: str | None = None) -> dict:
    """Delete an entry without losing its connections: every current X→B→Y becomes X→Y
    (a type both hops share when it is transitive, else see_also) with evidence naming B and
    both hops; then B's edges close, its aliases go and B is soft-deleted."""
    reason = _require_reason(reason)
    entry = find_entry(bank, ref, follow_merges=False)
    types = edge_types_for_bank(bank)
    with audit.operation(bank, OperationKind.DELETE, reason=reason, actor=actor) as op:
        lock_entries([entry.pk], exclusive=True)
        entry = Entry.objects.get(pk=entry.pk)
        if entry.status in (EntryStatus.MERGED, EntryStatus.DELETED):
            raise Conflict(
                f"Entry {entry.short_id} was {entry.status} meanwhile.",
                code=f"already_{entry.status}",
            )
        written = apply_delete(bank, entry, reason, types, op)
        audit.record(
            op,
            entry=entry.short_id,
            bridged=written.bridged,
            already_connected=written.skipped,
            closed=written.closed,
        )
    return {"operation": op.pk, "bridged": written.bridged}


# --- revert ---------------------------------------------------------------------------------


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


def revert_operation(
    bank: Bank, op_id, reason: str, *, force: bool = False, actor: str | None = None
) -> dict:
    """Undo an operation exactly: restore every row it touched to its state just before it,
    delete rows it created, recreate rows it deleted — in one transaction, as a new
    ``revert`` operation, in a constant number of statements. Refuses (409
    ``revert_conflict``) while a later operation's change to the same rows is still in place,
    unless ``force``; the refusal names the operations to revert first, in order."""
    reason = _require_reason(reason)
    try:
        op = Operation.objects.get(bank=bank, pk=int(op_id))
    except (TypeError, ValueError, Operation.DoesNotExist):
        raise NotFound(
            f"No operation {op_id!r} in this bank.", code="operation_not_found"
        ) from None
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
        audit.record(new_op, reverted=op.pk, rows=len(plan.rows), forced=bool(plan.conflicts))
    return {"operation": new_op.pk, "reverted": op.pk, "rows": len(plan.rows)}


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
