"""Delete an entry without losing its connections: bridge X→B→Y into X→Y, then soft-delete.

:func:`plan_delete` computes, read-only, what :func:`delete_entry` does (the admin's
confirmation page shows it); the delete executes that plan inside its operation."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q

from graph.curation.merge import BelievedTriples
from graph.curation.setwise_delete import apply_delete
from graph.edges.links import _require_reason, current_q, lock_entries
from graph.edges.vocab import edge_types_for_bank
from graph.models import Alias, Edge, EdgeType
from kb import audit
from kb.errors import Conflict
from kb.models import Bank, Entry, EntryStatus, Operation, OperationKind
from kb.services.entries import find_entry


@dataclass
class Bridge:
    """One X→B→Y pair of current edges and the X→Y edge that keeps the connection."""

    into: Edge  # X→B
    out: Edge  # B→Y
    relation: EdgeType  # both hops' type when it is transitive, else see_also
    interval: tuple | None  # the valid time written; None: X→Y of that type already exists
    existing: Edge | None = None  # the edge it collapses into

    @property
    def already_connected(self) -> bool:
        return self.interval is None


@dataclass
class DeletePlan:
    """Exactly what :func:`delete_entry` does to ``entry``, computed by :func:`plan_delete`."""

    entry: Entry
    edges: list[Edge] = field(default_factory=list)  # current edges, all closed
    bridges: list[Bridge] = field(default_factory=list)
    aliases: list[Alias] = field(default_factory=list)  # removed

    @property
    def bridged(self) -> list[Bridge]:
        return [b for b in self.bridges if not b.already_connected]

    @property
    def kept(self) -> list[Bridge]:
        return [b for b in self.bridges if b.already_connected]


def plan_delete(
    bank: Bank, entry: Entry, *, lock: bool = False, types: dict | None = None
) -> DeletePlan:
    """Every current X→B→Y (X ≠ Y) becomes X→Y: the hops' type when both share it and it is
    transitive, else ``see_also``, unless X→Y of that type is already believed for that time
    (then the connection is kept by that edge). ``lock`` row-locks B's edges."""
    types = types if types is not None else edge_types_for_bank(bank)
    edges = (
        Edge.objects.filter(bank=bank)
        .filter(Q(from_entry=entry) | Q(to_entry=entry))
        .filter(current_q())
        .select_related("type", "from_entry", "to_entry")
        .order_by("id")
    )
    if lock:
        edges = edges.select_for_update(of=("self",))
    plan = DeletePlan(entry, list(edges))
    incoming = [e for e in plan.edges if e.to_entry_id == entry.pk]
    outgoing = [e for e in plan.edges if e.from_entry_id == entry.pk]
    pairs = [
        (into, out)
        for into in incoming
        for out in outgoing
        if into.from_entry_id != out.to_entry_id
    ]
    ends = {(i.from_entry_id, o.to_entry_id) for i, o in pairs}
    believed = BelievedTriples(
        Edge.objects.filter(bank=bank, invalidated_at__isnull=True)
        .filter(from_entry_id__in={a for a, _ in ends}, to_entry_id__in={b for _, b in ends})
        .order_by("id")
        if ends
        else []
    )
    for into, out in pairs:
        shared = (
            into.type if into.type_id == out.type_id and into.type.transitive else types["see_also"]
        )
        interval, existing = believed.place(
            into.from_entry_id, out.to_entry_id, shared.pk, None, None
        )
        plan.bridges.append(Bridge(into, out, shared, interval, existing))
        if interval is not None:
            planned = Edge(
                from_entry_id=into.from_entry_id,
                to_entry_id=out.to_entry_id,
                type_id=shared.pk,
                valid_from=interval[0],
                valid_to=interval[1],
            )
            believed.add(planned)
    plan.aliases = list(Alias.objects.filter(bank=bank, entry=entry).order_by("surface"))
    return plan


@dataclass
class DeleteResult:
    operation: Operation
    entry: Entry
    bridged: int
    already_connected: int
    closed: list[int]

    def as_json(self) -> dict:
        return {"operation": self.operation.pk, "bridged": self.bridged}


def delete_entry(bank: Bank, ref: str, reason: str, *, actor: str | None = None) -> DeleteResult:
    """Delete an entry without losing its connections (see :func:`plan_delete`), with evidence
    naming B and both hops on every bridge; then B's edges close, its aliases go and B is
    soft-deleted. One ``delete`` operation, exactly revertible."""
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
        plan = plan_delete(bank, entry, lock=True, types=types)
        written = apply_delete(bank, plan, reason, op)
        result = DeleteResult(op, entry, written.bridged, written.skipped, written.closed)
        audit.record(
            op,
            entry=entry.short_id,
            bridged=result.bridged,
            already_connected=result.already_connected,
            closed=result.closed,
        )
    return result
