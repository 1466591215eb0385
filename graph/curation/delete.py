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
from kb.unit_of_work import unit_of_work


@dataclass
class Bridge:
    """One X→B→Y pair of current edges and the X→Y edge that keeps the connection."""

    into: Edge  # X→B
    out: Edge  # B→Y
    relation: EdgeType  # both hops' type when it is transitive, else see_also
    interval: tuple | None  # the valid time written; None: X→Y of that type already exists
    existing: Edge | None = None  # the edge it collapses into
    carried: bool = False  # X takes over B's corrects/supersedes of Y (see Correction)

    @property
    def already_connected(self) -> bool:
        return self.interval is None


# Relations by which the deleted entry replaces another: its corrections and supersessions.
CORRECTING = ("corrects", "supersedes")
# Who takes over a deleted entry's corrections: an entry that supersedes it, else one that
# corrects it (in that order of preference).
REPLACING = ("supersedes", "corrects")


@dataclass
class Correction:
    """A ``corrects``/``supersedes`` edge out of the deleted entry, and what becomes of it:
    carried to ``replacement`` (the entry that supersedes or corrects the deleted one: the
    target keeps ``corrected_by``/``superseded_by``, naming it) or, with no replacement,
    removed (the target then shows ``correction_removed`` naming the deleted entry)."""

    edge: Edge
    replacement: Entry | None

    @property
    def relation(self) -> str:
        return self.edge.type.name

    @property
    def target(self) -> Entry:
        return self.edge.to_entry

    def as_json(self) -> dict:
        return {
            "relation": self.relation,
            "target": {"id": self.target.short_id, "title": self.target.title},
            "carried_to": (
                {"id": self.replacement.short_id, "title": self.replacement.title}
                if self.replacement is not None
                else None
            ),
            "effect": (
                f"{self.target.short_id} stays {_marked(self.relation)} by "
                f"{self.replacement.short_id}: a {self.relation} edge is written from it"
                if self.replacement is not None
                else f"{self.target.short_id} is marked correction_removed: its "
                f"{self.relation} edge from the deleted entry closes and no entry replaces it"
            ),
        }


def _marked(relation: str) -> str:
    return {"corrects": "corrected", "supersedes": "superseded"}.get(relation, relation)


@dataclass
class DeletePlan:
    """Exactly what :func:`delete_entry` does to ``entry``, computed by :func:`plan_delete`."""

    entry: Entry
    edges: list[Edge] = field(default_factory=list)  # current edges, all closed
    bridges: list[Bridge] = field(default_factory=list)
    aliases: list[Alias] = field(default_factory=list)  # removed
    corrections: list[Correction] = field(default_factory=list)

    @property
    def corrections_removed(self) -> list[Correction]:
        return [c for c in self.corrections if c.replacement is None]

    def as_json(self) -> dict:
        """The plan as the REST preview shows it."""
        entry = self.entry
        return {
            "entry": {"id": entry.short_id, "title": entry.title},
            "bridges": [
                {
                    "from": b.into.from_entry.short_id,
                    "to": b.out.to_entry.short_id,
                    "relation": b.relation.name,
                    "through": [b.into.type.name, b.out.type.name],
                    "already_connected": b.already_connected,
                }
                for b in self.bridges
            ],
            "corrections": [c.as_json() for c in self.corrections],
            "edges_closed": len(self.edges),
            "aliases_removed": [a.surface for a in self.aliases],
        }

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
    plan.corrections = _corrections(incoming, outgoing)
    carried = {(c.edge.pk, c.replacement.pk) for c in plan.corrections if c.replacement is not None}
    for into, out in pairs:
        if (out.pk, into.from_entry_id) in carried:
            shared = out.type  # the replacement takes over the correction
        elif into.type_id == out.type_id and into.type.transitive:
            shared = into.type
        else:
            shared = types["see_also"]
        interval, existing = believed.place(
            into.from_entry_id, out.to_entry_id, shared.pk, None, None
        )
        carries = (out.pk, into.from_entry_id) in carried
        plan.bridges.append(Bridge(into, out, shared, interval, existing, carries))
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


def _corrections(incoming: list[Edge], outgoing: list[Edge]) -> list[Correction]:
    """Each corrects/supersedes edge out of the deleted entry, with its replacement: the
    source of a current supersedes (else corrects) edge into the deleted entry, never the
    corrected entry itself."""
    found = []
    for out in outgoing:
        if out.type.name not in CORRECTING:
            continue
        candidates = [
            e for e in incoming if e.type.name in REPLACING and e.from_entry_id != out.to_entry_id
        ]
        candidates.sort(key=lambda e: (REPLACING.index(e.type.name), e.pk))
        found.append(Correction(out, candidates[0].from_entry if candidates else None))
    return found


def delete_preview(bank: Bank, ref: str) -> DeletePlan:
    """The plan :func:`delete_entry` would execute for ``ref`` now (read-only); a merged or
    deleted entry answers 409 as the delete would."""
    entry = find_entry(bank, ref, follow_merges=False)
    if entry.status in (EntryStatus.MERGED, EntryStatus.DELETED):
        raise Conflict(f"Entry {entry.short_id} is {entry.status}.", code=f"already_{entry.status}")
    return plan_delete(bank, entry)


@dataclass
class DeleteResult:
    operation: Operation
    entry: Entry
    bridged: int
    already_connected: int
    closed: list[int]
    corrections: list[Correction] = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "operation": self.operation.pk,
            "bridged": self.bridged,
            "corrections": [c.as_json() for c in self.corrections],
        }


def delete_entry(bank: Bank, ref: str, reason: str, *, actor: str | None = None) -> DeleteResult:
    """Delete an entry without losing its connections (see :func:`plan_delete`), with evidence
    naming B and both hops on every bridge; then B's edges close, its aliases go and B is
    soft-deleted. One ``delete`` operation, exactly revertible."""
    reason = _require_reason(reason)
    entry = find_entry(bank, ref, follow_merges=False)
    types = edge_types_for_bank(bank)
    with unit_of_work(bank, OperationKind.DELETE, reason=reason, actor=actor) as op:
        lock_entries([entry.pk], exclusive=True)
        entry = Entry.objects.get(pk=entry.pk)
        if entry.status in (EntryStatus.MERGED, EntryStatus.DELETED):
            raise Conflict(
                f"Entry {entry.short_id} was {entry.status} meanwhile.",
                code=f"already_{entry.status}",
            )
        plan = plan_delete(bank, entry, lock=True, types=types)
        written = apply_delete(bank, plan, reason, op)
        result = DeleteResult(
            op, entry, written.bridged, written.skipped, written.closed, plan.corrections
        )
        audit.record(
            op,
            entry=entry.short_id,
            bridged=result.bridged,
            already_connected=result.already_connected,
            closed=result.closed,
            corrections=[c.as_json() for c in plan.corrections],
        )
    return result
