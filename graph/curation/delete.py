"""Delete an entry without losing its connections: bridge X→B→Y into X→Y, then soft-delete."""

from __future__ import annotations

from graph.curation.setwise_delete import apply_delete
from graph.edges.links import _require_reason, lock_entries
from graph.edges.vocab import edge_types_for_bank
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
        written = apply_delete(bank, entry, reason, types, op)
        audit.record(
            op,
            entry=entry.short_id,
            bridged=written.bridged,
            already_connected=written.skipped,
            closed=written.closed,
        )
    return {"operation": op.pk, "bridged": written.bridged}
