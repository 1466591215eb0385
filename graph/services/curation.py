"""Curation: merges, deletions that bridge, and exact reverts of any operation."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q
from django.utils import timezone

from graph.models import Alias, Edge, EdgeSource
from graph.services.aliases import normalize
from graph.services.edges import (
    LinkRequest,
    _require_reason,
    close_edge,
    current_q,
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

    def as_json(self) -> dict:
        return {
            "operation": self.operation.pk,
            "keep": self.keep.short_id,
            "away": self.away.short_id,
            "edges_repointed": self.edges_repointed,
            "edges_collapsed": self.edges_collapsed,
            "aliases_added": self.aliases_added,
            "self_loops_dropped": self.self_loops_dropped,
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
        repointed = collapsed = 0
        self_loops: list[int] = []
        edges = (
            Edge.objects.select_for_update(of=("self",))
            .filter(bank=bank, invalidated_at__isnull=True)
            .filter(Q(from_entry=away) | Q(to_entry=away))
            .select_related("type", "from_entry", "to_entry")
            .order_by("id")
        )
        for edge in edges:
            new_from = keep if edge.from_entry_id == away.pk else edge.from_entry
            new_to = keep if edge.to_entry_id == away.pk else edge.to_entry
            if new_from.pk == new_to.pk:
                close_edge(
                    edge, f"merge of {away.short_id} into {keep.short_id}: would be a self-loop"
                )
                self_loops.append(edge.pk)
                continue
            req = LinkRequest(
                new_from,
                new_to,
                edge.type,
                edge.note,
                {**(edge.evidence or {}), "merged_from": away.short_id},
                edge.label,
                edge.valid_from,
                edge.valid_to,
                edge.source,
            )
            close_edge(edge, f"merge of {away.short_id} into {keep.short_id}")
            if write_preserving(bank, req, replaces=edge) is None:
                collapsed += 1  # keep already has this edge: the duplicate collapses into it
            else:
                repointed += 1
        aliases_added = 0
        kept_forms = set(
            Alias.objects.filter(bank=bank, entry=keep).values_list("normalized", flat=True)
        )
        for alias in Alias.objects.select_for_update(of=("self",)).filter(bank=bank, entry=away):
            if alias.normalized in kept_forms:
                alias.delete()  # both named the form: the merged entry is its one answer now
                continue
            alias.entry = keep
            alias.save()
            kept_forms.add(alias.normalized)
            aliases_added += 1
        for surface in filter(None, [away.short_id, away.key, away.title]):
            norm = normalize(surface)
            if norm and norm not in kept_forms:
                kept_forms.add(norm)
                Alias.objects.create(
                    bank=bank,
                    entry=keep,
                    surface=surface,
                    normalized=norm,
                    source="merge",
                    actor=op.actor,
                )
                aliases_added += 1
        away.status = EntryStatus.MERGED
        away.merged_into = keep
        away.status_changed_at = timezone.now()
        away.save()
        result = MergeResult(op, keep, away, repointed, collapsed, aliases_added, self_loops)
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
        edges = list(
            Edge.objects.select_for_update(of=("self",))
            .filter(bank=bank)
            .filter(Q(from_entry=entry) | Q(to_entry=entry))
            .filter(current_q())
            .select_related("type", "from_entry", "to_entry")
            .order_by("id")
        )
        incoming = [e for e in edges if e.to_entry_id == entry.pk]
        outgoing = [e for e in edges if e.from_entry_id == entry.pk]
        bridged, skipped = 0, 0
        for into in incoming:
            for out in outgoing:
                if into.from_entry_id == out.to_entry_id:
                    continue
                shared = (
                    into.type
                    if into.type_id == out.type_id and into.type.transitive
                    else types["see_also"]
                )
                evidence = {
                    "bridged_over": {"id": entry.short_id, "title": entry.title},
                    "hops": [
                        {"edge": into.pk, "relation": into.type.name, "note": into.note},
                        {"edge": out.pk, "relation": out.type.name, "note": out.note},
                    ],
                }
                note = f"Bridged over deleted {entry.short_id} ({into.type.name}, then {out.type.name})."
                req = LinkRequest(
                    into.from_entry,
                    out.to_entry,
                    shared,
                    note,
                    evidence,
                    "",
                    None,
                    None,
                    EdgeSource.BRIDGED,
                )
                if write_preserving(bank, req) is None:
                    skipped += 1  # X→Y of that type already exists: the connection is kept
                else:
                    bridged += 1
        for edge in edges:
            close_edge(edge, f"entry {entry.short_id} deleted: {reason}")
        for alias in Alias.objects.filter(bank=bank, entry=entry):
            alias.delete()
        entry.status = EntryStatus.DELETED
        entry.status_changed_at = timezone.now()
        entry.save()
        audit.record(
            op,
            entry=entry.short_id,
            bridged=bridged,
            already_connected=skipped,
            closed=[e.pk for e in edges],
        )
    return {"operation": op.pk, "bridged": bridged}


# --- revert ---------------------------------------------------------------------------------


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


def revert_operation(
    bank: Bank, op_id, reason: str, *, force: bool = False, actor: str | None = None
) -> dict:
    """Undo an operation exactly: restore every row it touched to its state just before it,
    delete rows it created, recreate rows it deleted — in one transaction, as a new
    ``revert`` operation. Refuses (409 ``revert_conflict``) when a later operation changed
    the same rows, unless ``force``."""
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
    return {"operation": new_op.pk, "reverted": op.pk, "rows": len(plans)}


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
