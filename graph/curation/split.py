"""Split an entry into parts: new entries joined to the original by ``split_from``, with the
original's current edges distributed as the curator chooses. One revertible operation."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q
from django.utils import timezone

from graph.curation.edge_rows import append_edges, close_edges
from graph.edges.links import (
    LinkRequest,
    current_q,
    lock_entries,
    write_edge,
)
from graph.edges.notes import split_note
from graph.edges.vocab import edge_types_for_bank
from graph.models import Edge, EdgeSource
from kb import audit
from kb.errors import Conflict, InvalidInput
from kb.models import Bank, Entry, EntryStatus, Operation, OperationKind
from kb.services.entries import (
    CREATE_FIELDS,
    clean_entry_data,
    create_entry,
    find_entry,
    kinds_for_bank,
)
from kb.unit_of_work import unit_of_work

MAX_PARTS = 20
KEEP = "keep"
PART_FIELDS = tuple(f for f in CREATE_FIELDS if f != "connections")


@dataclass
class SplitResult:
    operation: Operation
    original: Entry
    parts: list[Entry]
    moved: dict[int, int]  # closed edge id -> the edge that replaces it on a part

    def as_json(self) -> dict:
        return {
            "operation": self.operation.pk,
            "original": self.original.short_id,
            "parts": [p.short_id for p in self.parts],
            "moved": {str(old): new for old, new in self.moved.items()},
        }


def _clean_parts(bank: Bank, parts: list[dict]) -> list[dict]:
    """Each part checked as a new entry of this bank (its kinds and limits); two parts may not
    share a key. (The list's shape is the split action's declaration's.)"""
    kinds = kinds_for_bank(bank)
    cleaned, errors = [], {}
    for i, part in enumerate(parts):
        try:
            cleaned.append(
                clean_entry_data(
                    bank, part, allowed=PART_FIELDS, kinds=kinds, lifetime_required=False
                )
            )
        except InvalidInput as exc:
            for name, message in (exc.fields or {"body": exc.message}).items():
                errors[f"parts[{i}].{name}"] = message
    keys = [p["key"] for p in cleaned if p.get("key")]
    if len(keys) != len(set(keys)):
        errors["parts"] = "Two parts have the same key."
    if errors:
        raise InvalidInput(
            "Some parts are invalid: " + ", ".join(sorted(errors)) + ".",
            code="invalid_split",
            fields=errors,
        )
    return cleaned


def _moves(
    edges: dict[int, int | str] | None, current: dict[int, Edge], n_parts: int
) -> dict[int, int]:
    """``{edge id: part index | "keep"}`` → ``{edge id: part index}`` for the edges that
    move: each edge named must be a current edge of the entry being split, each index one of
    the parts. (That ids are ids and indexes whole numbers is the split action's
    declaration's.)"""
    errors = {}
    for edge_id, target in (edges or {}).items():
        if edge_id not in current:
            errors[f"edges.{edge_id}"] = "Not a current edge of the entry being split."
        elif target != KEEP and target >= n_parts:
            errors[f"edges.{edge_id}"] = f'Must be a part index from 0 to {n_parts - 1} or "keep".'
    if errors:
        raise InvalidInput(
            "Some edge assignments are invalid: " + ", ".join(sorted(errors)) + ".",
            code="invalid_split",
            fields=errors,
        )
    return {edge_id: target for edge_id, target in (edges or {}).items() if target != KEEP}


def split_entry(
    bank: Bank,
    entry_ref: str,
    parts: list[dict],
    *,
    edges: dict[int, int | str] | None = None,
    reason: str,
    actor: str | None = None,
) -> SplitResult:
    """Create ``parts`` (validated like new entries) with a ``split_from`` edge from each part
    to the original, then move the original's current edges named in ``edges`` ({edge id: part
    index or "keep"}) to the part given (closing the old row, appending the re-pointed one);
    unnamed edges stay. The original stays as it is. One ``split`` operation:
    ``revert_operation`` undoes it exactly. The input's shape (1 to ``MAX_PARTS`` parts, ids,
    indexes, a reason) is :class:`graph.actions.curation.SplitRequestSerializer`'s."""
    original = find_entry(bank, entry_ref, follow_merges=False)
    if original.status in (EntryStatus.MERGED, EntryStatus.DELETED):
        raise Conflict(
            f"Entry {entry_ref!r} was {original.status}; it cannot be split.",
            code="entry_not_splittable",
        )
    cleaned = _clean_parts(bank, parts)
    types = edge_types_for_bank(bank)
    with unit_of_work(
        bank, OperationKind.SPLIT, reason=reason, actor=actor, entry=original.short_id
    ) as op:
        original = Entry.objects.select_for_update().get(pk=original.pk)
        current = _current_edges(bank, original)
        moves = _moves(edges, current, len(cleaned))
        # The parts restate the entry being split (which stays until the split lands): a
        # curator's split is not a duplicate write.
        created = [create_entry(bank, data, actor=actor, allow_duplicate=True) for data in cleaned]
        for part in created:
            write_edge(
                bank,
                LinkRequest(
                    part,
                    original,
                    types["split_from"],
                    note=split_note(part.short_id, original.short_id),
                    evidence={"split": {"original": original.short_id, "reason": reason}},
                    source=EdgeSource.STAFF if op.actor.startswith("staff:") else EdgeSource.AUTHOR,
                ),
            )
        moved = _move_edges(bank, original, created, current, moves, op.actor)
        result = SplitResult(op, original, created, moved)
        audit.record(op, **{k: v for k, v in result.as_json().items() if k != "operation"})
    return result


def _move_edges(
    bank: Bank,
    original: Entry,
    parts: list[Entry],
    current: dict[int, Edge],
    moves: dict[int, int],
    actor: str,
) -> dict[int, int]:
    """Close each moved edge and append it re-pointed to its part: set-wise, a constant
    number of statements whatever the number of edges."""
    if not moves:
        return {}
    now = timezone.now()
    order = sorted(moves)
    others = {
        end
        for edge_id in order
        for end in (current[edge_id].from_entry_id, current[edge_id].to_entry_id)
        if end != original.pk
    }
    states = lock_entries(others)
    for pk in others:
        status = states.get(pk, ("deleted", None))[0]
        if status in (EntryStatus.MERGED, EntryStatus.DELETED):
            raise Conflict(
                f"An entry connected to {original.short_id} was {status} meanwhile.",
                code=f"entry_{status}",
            )
    close_edges(
        {
            edge_id: f"split of {original.short_id}: moved to {parts[moves[edge_id]].short_id}"
            for edge_id in order
        },
        now,
    )
    successors = []
    for edge_id in order:
        edge, part = current[edge_id], parts[moves[edge_id]]
        successors.append(
            Edge(
                bank=bank,
                from_entry_id=part.pk if edge.from_entry_id == original.pk else edge.from_entry_id,
                to_entry_id=part.pk if edge.to_entry_id == original.pk else edge.to_entry_id,
                type_id=edge.type_id,
                note=edge.note,
                evidence={**(edge.evidence or {}), "split_from": original.short_id},
                label=edge.label,
                valid_from=edge.valid_from,
                valid_to=edge.valid_to,
                source=edge.source,
                actor=actor,
                recorded_at=now,
                replaces_id=edge.pk,
            )
        )
    written = append_edges(successors, when=now)
    return {edge_id: new.pk for edge_id, new in zip(order, written, strict=True)}


def _current_edges(bank: Bank, entry: Entry) -> dict[int, Edge]:
    """The entry's current edges both ways, locked for the operation."""
    rows = (
        Edge.objects.select_for_update(of=("self",))
        .filter(bank=bank)
        .filter(current_q())
        .filter(Q(from_entry=entry) | Q(to_entry=entry))
        .select_related("type", "from_entry", "to_entry")
        .order_by("id")
    )
    return {e.pk: e for e in rows}
