"""Exact reverts in a constant number of statements, and conflicts that converge.

Planning reads, per audited model, the operation's historical rows, the whole timeline of the
rows it touched and their present state (three statements, whatever the size). A row blocks
the revert only when its present state is no longer the one the operation left: an operation
that was reverted since, or whose change was undone, no longer blocks. The operations named
are the later ones whose effects are still in place on such rows, plus any operation whose
present row would clash with a row the revert restores (the same edge triple believed again,
the same alias form taken again), and, transitively, what blocks reverting those: reverting
the named operations in the order given (newest first) and then the original succeeds.

Restoring is set-wise too: created rows (entries included) are deleted (history first, then
what points at them, then the rows, a statement per relation), changed rows get their
prior columns back from the historical rows in one ``UPDATE … FROM``, deleted rows are
re-inserted from them, each with one history INSERT stamped with the revert operation.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from django.db import IntegrityError, connection, models, transaction
from django.db.models import Subquery
from django.utils import timezone

from graph.models import Alias, Edge
from kb.errors import Conflict
from kb.history_rows import record_rows, tracked_columns
from kb.models import Entry, Operation, OperationKind

MAX_CLOSURE = 200  # operations examined when following what blocks the blockers


def audited_models() -> list:
    """Models whose historical rows carry operation ids, parents first."""
    return [Entry, Edge, Alias]


@functools.cache
def _fields(model) -> tuple[str, ...]:
    return tuple(f.attname for f in model.history.model.tracked_fields)


@dataclass(eq=False)
class RowPlan:
    model: type
    id: int
    prior: object | None  # historical row just before the operation; None: it created it
    last: object  # the operation's last historical row of this object


@dataclass
class RevertPlan:
    rows: list[RowPlan] = field(default_factory=list)
    conflicts: list[dict] = field(default_factory=list)

    @property
    def blockers(self) -> list[int]:
        found = {op for c in self.conflicts for op in c.get("operations", [])}
        return sorted(found, reverse=True)


def _state(model, obj) -> tuple | None:
    if obj is None:
        return None
    return tuple(getattr(obj, name) for name in _fields(model))


def _left_by(model, row) -> tuple | None:
    """The state the historical ``row`` describes (None: the object was deleted)."""
    return None if row.history_type == "-" else _state(model, row)


def plan_revert(op: Operation) -> RevertPlan:
    """Every row ``op`` touched with its prior state, and the conflicts (see the module)."""
    plan = RevertPlan()
    later_ops: dict[tuple, list[int]] = {}
    for model in audited_models():
        hist = model.history.model
        # The whole timeline of every object the operation touched, in one read.
        touched = hist.objects.filter(operation_id=op.pk).values("id")
        timeline: dict[int, list] = {}
        by_object: dict[int, list] = {}
        for row in hist.objects.filter(id__in=Subquery(touched)).order_by("id", "history_id"):
            timeline.setdefault(row.id, []).append(row)
            if row.operation_id == op.pk:
                by_object.setdefault(row.id, []).append(row)
        if not by_object:
            continue
        present = {
            values[0]: values[1:]
            for values in model.objects.filter(pk__in=list(by_object)).values_list(
                "pk", *_fields(model)
            )
        }
        for obj_id, obj_rows in by_object.items():
            first, last = obj_rows[0], obj_rows[-1]
            before = [r for r in timeline[obj_id] if r.history_id < first.history_id]
            plan.rows.append(RowPlan(model, obj_id, before[-1] if before else None, last))
            if present.get(obj_id) == _left_by(model, last):
                continue  # as the operation left it: later changes were undone
            after = [
                r
                for r in timeline[obj_id]
                if r.history_id > last.history_id and r.operation_id not in (None, op.pk)
            ]
            later_ops[(model, obj_id)] = list(dict.fromkeys(r.operation_id for r in after))
            plan.conflicts.append(
                {
                    "model": model.__name__.lower(),
                    "id": obj_id,
                    "operation": after[-1].operation_id if after else None,
                    "changed_at": (after[-1] if after else last).history_date.isoformat(),
                }
            )
    clashes = _clashes(plan)
    states = dict(
        Operation.objects.filter(
            pk__in={o for ops in later_ops.values() for o in ops} | set(clashes.values())
        ).values_list("pk", "reverted_by_id")
    )
    kinds = (
        dict(Operation.objects.filter(pk__in=list(states)).values_list("pk", "kind"))
        if states
        else {}
    )
    for conflict in plan.conflicts:
        model = next(m for m in audited_models() if m.__name__.lower() == conflict["model"])
        ops = later_ops.get((model, conflict["id"]), [])
        in_place = [o for o in ops if states.get(o) is None]
        named = [o for o in in_place if kinds.get(o) != OperationKind.REVERT] or in_place
        conflict["operations"] = sorted(named, reverse=True)
        if named:
            conflict["operation"] = max(named)
    for (model, obj_id, other_id), blocker in clashes.items():
        if states.get(blocker) is None:
            plan.conflicts.append(
                {
                    "model": model.__name__.lower(),
                    "id": obj_id,
                    "operation": blocker,
                    "operations": [blocker],
                    "clashes_with": other_id,
                    "changed_at": None,
                }
            )
    return plan


def _clashes(plan: RevertPlan) -> dict[tuple, int]:
    """Rows the revert would bring back that clash with a present row outside the revert: an
    edge believed again over a triple and valid time now believed by another edge, an alias
    (form, entry) pair now held by another alias. → the operation that last wrote the clashing row."""
    planned = {(p.model, p.id) for p in plan.rows}
    back_edges = [
        p.prior
        for p in plan.rows
        if p.model is Edge
        and p.prior is not None
        and p.prior.history_type != "-"
        and p.prior.invalidated_at is None
    ]
    back_aliases = [
        p.prior
        for p in plan.rows
        if p.model is Alias and p.prior is not None and p.prior.history_type != "-"
    ]
    found: dict[tuple, int] = {}
    pairs: list[tuple] = []
    with connection.cursor() as cur:
        if back_edges:
            cur.execute(
                "SELECT u.id, e.id FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[], "
                "%s::bigint[], %s::timestamptz[], %s::timestamptz[]) AS u(id, f, t, ty, vf, vt) "
                "JOIN graph_edge e ON e.from_entry_id = u.f AND e.to_entry_id = u.t "
                "AND e.type_id = u.ty AND e.invalidated_at IS NULL AND e.id <> u.id "
                "AND tstzrange(e.valid_from, e.valid_to, '[)') && tstzrange(u.vf, u.vt, '[)')",
                [
                    [r.id for r in back_edges],
                    [r.from_entry_id for r in back_edges],
                    [r.to_entry_id for r in back_edges],
                    [r.type_id for r in back_edges],
                    [r.valid_from for r in back_edges],
                    [r.valid_to for r in back_edges],
                ],
            )
            pairs += [(Edge, a, b) for a, b in cur.fetchall() if (Edge, b) not in planned]
        if back_aliases:
            cur.execute(
                "SELECT u.id, a.id FROM unnest(%s::bigint[], %s::bigint[], %s::text[], "
                "%s::bigint[]) AS u(id, bank, norm, entry) JOIN graph_alias a "
                "ON a.bank_id = u.bank AND a.normalized = u.norm AND a.entry_id = u.entry "
                "AND a.id <> u.id",
                [
                    [r.id for r in back_aliases],
                    [r.bank_id for r in back_aliases],
                    [r.normalized for r in back_aliases],
                    [r.entry_id for r in back_aliases],
                ],
            )
            pairs += [(Alias, a, b) for a, b in cur.fetchall() if (Alias, b) not in planned]
    for model in (Edge, Alias):
        others = [b for m, _, b in pairs if m is model]
        if not others:
            continue
        last_op = dict(
            model.history.model.objects.filter(id__in=others, operation_id__isnull=False)
            .order_by("id", "-history_id")
            .distinct("id")
            .values_list("id", "operation_id")
        )
        for m, a, b in pairs:
            if m is model and b in last_op:
                found[(model, a, b)] = last_op[b]
    return found


def touched_entries(op: Operation) -> set[int]:
    """Entries ``op`` changed and the ends of edges it changed (two reads)."""
    touched = set(
        Entry.history.model.objects.filter(operation_id=op.pk).values_list("id", flat=True)
    )
    for ends in Edge.history.model.objects.filter(operation_id=op.pk).values_list(
        "from_entry_id", "to_entry_id"
    ):
        touched.update(ends)
    return touched


def blocking_operations(op: Operation, plan: RevertPlan) -> list[int]:
    """The operations to revert before ``op``, newest first: its blockers and, transitively,
    theirs."""
    seen: set[int] = set()
    queue = list(plan.blockers)
    while queue and len(seen) < MAX_CLOSURE:
        blocker = queue.pop()
        if blocker in seen or blocker == op.pk:
            continue
        seen.add(blocker)
        other = Operation.objects.filter(pk=blocker).first()
        if other is not None and other.reverted_by_id is None:
            queue.extend(plan_revert(other).blockers)
    return sorted(seen, reverse=True)


def _restore(model, history_ids: list[int]) -> None:
    """Give rows back the columns of their historical rows ``history_ids`` (one UPDATE)."""
    if not history_ids:
        return
    columns = [c for c in tracked_columns(model) if c != "id"]
    q = connection.ops.quote_name
    sets = ", ".join(f"{q(c)} = h.{q(c)}" for c in columns)
    with connection.cursor() as cur:
        cur.execute(
            f"UPDATE {q(model._meta.db_table)} AS t SET {sets} "
            f"FROM {q(model.history.model._meta.db_table)} AS h "
            f"WHERE h.history_id = ANY(%s) AND t.id = h.id",
            [history_ids],
        )


def _reinsert(model, history_ids: list[int]) -> None:
    """Insert rows back from their historical rows ``history_ids`` (one INSERT)."""
    if not history_ids:
        return
    q = connection.ops.quote_name
    cols = ", ".join(q(c) for c in tracked_columns(model))
    with connection.cursor() as cur:
        cur.execute(
            f"INSERT INTO {q(model._meta.db_table)} ({cols}) SELECT {cols} "
            f"FROM {q(model.history.model._meta.db_table)} WHERE history_id = ANY(%s) "
            "ORDER BY id",
            [history_ids],
        )


def delete_rows(model, ids: list[int], *, when) -> None:
    """Delete rows of an audited model that nothing audited references any more: their
    history rows first, then what points at them (vectors go, back-references are cleared)
    and the rows, one statement each."""
    if not ids:
        return
    reverse = [  # hidden relations too (related_name="+"): they hold real foreign keys
        f
        for f in model._meta.get_fields(include_hidden=True)
        if f.auto_created and not f.concrete and (f.one_to_many or f.one_to_one)
    ]
    for rel in reverse:
        if rel.on_delete is models.PROTECT:  # a row outside the deletion still needs one
            related = rel.related_model._base_manager.filter(**{f"{rel.field.name}__in": ids})
            if rel.related_model is model:
                related = related.exclude(pk__in=ids)
            if related.exists():
                raise Conflict(
                    f"A {model.__name__.lower()} this revert deletes is still referenced by "
                    f"another {rel.related_model.__name__.lower()} ({rel.field.name}); "
                    "change that first.",
                    code="revert_conflict",
                )
    record_rows(model, ids, "-", when=when)
    for rel in reverse:
        related = rel.related_model._base_manager.filter(**{f"{rel.field.name}__in": ids})
        if rel.on_delete is models.CASCADE:
            related.delete()
        elif rel.on_delete is models.SET_NULL:
            related.update(**{rel.field.name: None})
    model._base_manager.filter(pk__in=ids)._raw_delete(connection.alias)


def apply_revert(plan: RevertPlan) -> None:
    """Bring every planned row back to its prior state inside the open revert operation."""
    now = timezone.now()
    rows = plan.rows
    # 1. Remove the rows the operation created, children first (history records each one).
    for model in reversed(audited_models()):
        created = sorted(p.id for p in rows if p.model is model and p.prior is None)
        if created:  # what points at them outside the audit (vectors, proposals) goes too
            delete_rows(model, created, when=now)
    # 2. Restore the others, parents first; rows being closed before rows being reopened, so
    #    the one-believed-row rule holds after every statement.
    try:
        with transaction.atomic():
            for model in audited_models():
                restores = [p for p in rows if p.model is model and p.prior is not None]
                if not restores:
                    continue
                present = set(
                    model.objects.filter(pk__in=[p.id for p in restores]).values_list(
                        "pk", flat=True
                    )
                )
                gone = [p for p in restores if p.prior.history_type == "-"]
                back = [p for p in restores if p.prior.history_type != "-"]
                closing = [p for p in back if getattr(p.prior, "invalidated_at", 1) is not None]
                opening = [p for p in back if getattr(p.prior, "invalidated_at", 1) is None]
                for group in (closing, opening):
                    _restore(model, [p.prior.history_id for p in group if p.id in present])
                    _reinsert(model, [p.prior.history_id for p in group if p.id not in present])
                if gone:  # deleted before the operation re-created them: delete again
                    ids = sorted(p.id for p in gone if p.id in present)
                    delete_rows(model, ids, when=now)
                changed = sorted(p.id for p in back if p.id in present)
                record_rows(model, changed, "~", when=now)
                record_rows(model, sorted(p.id for p in back if p.id not in present), "+", when=now)
    except IntegrityError as exc:
        raise Conflict(
            "A row this revert restores clashes with one written meanwhile; try again.",
            code="revert_conflict",
        ) from exc
