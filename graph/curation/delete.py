"""Delete an entry without losing its connections: bridge X→B→Y into X→Y, then soft-delete."""

from __future__ import annotations

from django.db.models import Q
from django.utils import timezone

from graph.curation.merge import write_preserving
from graph.edges.links import LinkRequest, _require_reason, close_edge, current_q, lock_entries
from graph.edges.vocab import edge_types_for_bank
from graph.models import Alias, Edge, EdgeSource
from kb import audit
from kb.errors import Conflict
from kb.models import Bank, Entry, EntryStatus, OperationKind
from kb.services.entries import find_entry


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
