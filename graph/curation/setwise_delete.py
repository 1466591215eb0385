"""Delete with bridging in a constant number of statements.

What is written is :func:`graph.curation.delete.plan_delete`'s plan (the plan the admin
preview shows): every planned X→Y bridge is inserted in one statement with its history rows,
B's edges close in one, its aliases go in one, then B is marked deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from graph.curation.edge_rows import append_edges, close_edges
from graph.edges.links import lock_entries
from graph.edges.notes import bridge_note
from graph.models import Alias, Edge, EdgeSource
from kb.errors import Conflict
from kb.models import Bank, EntryStatus


@dataclass
class DeleteWrite:
    bridged: int
    skipped: int
    closed: list[int]


def apply_delete(bank: Bank, plan, reason: str, op) -> DeleteWrite:
    """Write ``plan`` (a :class:`graph.curation.delete.DeletePlan`, computed with the entry's
    edges locked) inside the open operation ``op``; the caller holds the entry's exclusive
    lock."""
    from graph.curation.setwise_revert import delete_rows

    entry = plan.entry
    now = timezone.now()
    rows: list[Edge] = []
    for bridge in plan.bridged:
        into, out = bridge.into, bridge.out
        rows.append(
            Edge(
                bank=bank,
                from_entry_id=into.from_entry_id,
                to_entry_id=out.to_entry_id,
                type=bridge.relation,
                note=(
                    f"Takes over the {out.type.name} edge of deleted {entry.short_id}, "
                    f"which the source {into.type.name}."
                    if bridge.carried
                    else bridge_note(
                        entry.short_id,
                        into.type.name,
                        out.type.name,
                        into.from_entry.short_id,
                        out.to_entry.short_id,
                    )
                ),
                evidence={
                    "bridged_over": {"id": entry.short_id, "title": entry.title},
                    "hops": [
                        {"edge": into.pk, "relation": into.type.name, "note": into.note},
                        {"edge": out.pk, "relation": out.type.name, "note": out.note},
                    ],
                },
                source=EdgeSource.BRIDGED,
                actor=op.actor,
                valid_from=bridge.interval[0],
                valid_to=bridge.interval[1],
                recorded_at=now,
            )
        )
    ends = {r.from_entry_id for r in rows} | {r.to_entry_id for r in rows}
    states = lock_entries(ends) if ends else {}
    for pk in ends:
        status = states.get(pk, ("deleted", None))[0]
        if status in (EntryStatus.MERGED, EntryStatus.DELETED):
            raise Conflict(
                f"An entry bridged to was {status} meanwhile; delete again.",
                code=f"entry_{status}",
            )
    append_edges(rows, when=now)
    closed = close_edges(
        {e.pk: f"entry {entry.short_id} deleted: {reason}" for e in plan.edges}, now
    )
    delete_rows(Alias, sorted(a.pk for a in plan.aliases), when=now)
    entry.status = EntryStatus.DELETED
    entry.status_changed_at = now
    entry.save()
    return DeleteWrite(bridged=len(rows), skipped=len(plan.kept), closed=closed)
