"""Split an entry into parts: new entries joined to the original by ``split_from``, with the
original's current edges distributed as the curator chooses. One revertible operation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from graph.edges.links import LinkRequest, _require_reason, close_edge, current_q, write_edge
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


def _clean_parts(bank: Bank, parts: Any) -> list[dict]:
    if not isinstance(parts, list) or not 1 <= len(parts) <= MAX_PARTS:
        raise InvalidInput(
            f"parts must be a list of 1 to {MAX_PARTS} entry payloads.",
            code="invalid_split",
            fields={"parts": "A list of entry payloads."},
        )
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


def _clean_assignment(edges: Any, current: dict[int, Edge], n_parts: int) -> dict[int, int]:
    """``{edge id: part index | "keep"}`` → ``{edge id: part index}`` for the edges that move."""
    if edges is None:
        return {}
    if not isinstance(edges, dict):
        raise InvalidInput(
            'edges must be an object {"<edge id>": <part index> or "keep"}.',
            code="invalid_split",
            fields={"edges": "Must be an object."},
        )
    moves, errors = {}, {}
    for raw_id, target in edges.items():
        try:
            edge_id = int(raw_id)
        except (TypeError, ValueError):
            errors[f"edges.{raw_id}"] = "Not an edge id."
            continue
        if edge_id not in current:
            errors[f"edges.{raw_id}"] = "Not a current edge of the entry being split."
            continue
        if target == KEEP:
            continue
        if not isinstance(target, int) or isinstance(target, bool) or not 0 <= target < n_parts:
            errors[f"edges.{raw_id}"] = f'Must be a part index from 0 to {n_parts - 1} or "keep".'
            continue
        moves[edge_id] = target
    if errors:
        raise InvalidInput(
            "Some edge assignments are invalid: " + ", ".join(sorted(errors)) + ".",
            code="invalid_split",
            fields=errors,
        )
    return moves


def split_entry(
    bank: Bank,
    entry_ref: str,
    parts: Any,
    *,
    edges: Any = None,
    reason: Any,
    actor: str | None = None,
) -> SplitResult:
    """Create ``parts`` (validated like new entries) with a ``split_from`` edge from each part
    to the original, then move the original's current edges named in ``edges`` to the part
    given (closing the old row, appending the re-pointed one); unnamed edges stay. The original
    stays as it is. One ``split`` operation: ``revert_operation`` undoes it exactly."""
    reason = _require_reason(reason)
    original = find_entry(bank, entry_ref, follow_merges=False)
    if original.status in (EntryStatus.MERGED, EntryStatus.DELETED):
        raise Conflict(
            f"Entry {entry_ref!r} was {original.status}; it cannot be split.",
            code="entry_not_splittable",
        )
    cleaned = _clean_parts(bank, parts)
    types = edge_types_for_bank(bank)
    with audit.operation(
        bank, OperationKind.SPLIT, reason=reason, actor=actor, entry=original.short_id
    ) as op:
        original = Entry.objects.select_for_update().get(pk=original.pk)
        current = _current_edges(bank, original)
        moves = _clean_assignment(edges, current, len(cleaned))
        created = [create_entry(bank, data, actor=actor) for data in cleaned]
        for part in created:
            write_edge(
                bank,
                LinkRequest(
                    part,
                    original,
                    types["split_from"],
                    evidence={"split": {"original": original.short_id, "reason": reason}},
                    source=EdgeSource.STAFF if op.actor.startswith("staff:") else EdgeSource.AUTHOR,
                ),
            )
        moved: dict[int, int] = {}
        for edge_id, index in sorted(moves.items()):
            edge = current[edge_id]
            part = created[index]
            close_edge(edge, f"split of {original.short_id}: moved to {part.short_id}")
            successor = write_edge(
                bank,
                LinkRequest(
                    part if edge.from_entry_id == original.pk else edge.from_entry,
                    part if edge.to_entry_id == original.pk else edge.to_entry,
                    edge.type,
                    edge.note,
                    {**(edge.evidence or {}), "split_from": original.short_id},
                    edge.label,
                    edge.valid_from,
                    edge.valid_to,
                    edge.source,
                ),
                replaces=edge,
            )
            moved[edge_id] = successor.pk
        result = SplitResult(op, original, created, moved)
        audit.record(op, **{k: v for k, v in result.as_json().items() if k != "operation"})
    return result


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
