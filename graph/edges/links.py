"""Edges: link, unlink, retype, invalidate and correct — each one audited operation.

Corrections never overwrite: they close the old row's transaction interval and append new
rows (``replaces`` points back), so as-of queries still see what was believed before.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from graph.edges.clocks import overlapping_q, parse_instant
from graph.edges.current import current_q, valid_q  # noqa: F401  (re-exported: callers import them here)
from graph.edges.vocab import edge_type, edge_types_for_bank
from graph.models import Edge, EdgeSource, EdgeType
from kb import audit
from kb.errors import Conflict, InvalidInput, NotFound
from kb.inputs import parse_int_id
from kb.models import Bank, Entry, OperationKind
from kb.services.entries import find_entry
from kb.unit_of_work import unit_of_work

NOTE_COPY_WORDS = 8
NOTE_MAX = 2000
_WORD = re.compile(r"[\w'-]+", re.UNICODE)


# --- time predicates ------------------------------------------------------------------------


def believed_q(as_of: dt.datetime | None = None, prefix: str = "") -> Q:
    """Rows whose transaction interval contains ``as_of`` (default: open now)."""
    if as_of is None:
        return Q(**{f"{prefix}invalidated_at__isnull": True})
    return Q(**{f"{prefix}recorded_at__lte": as_of}) & (
        Q(**{f"{prefix}invalidated_at__isnull": True}) | Q(**{f"{prefix}invalidated_at__gt": as_of})
    )


def current_edges_of(entry: Entry) -> QuerySet[Edge]:
    return (
        Edge.objects.filter(bank_id=entry.bank_id)
        .filter(Q(from_entry=entry) | Q(to_entry=entry))
        .filter(current_q())
        .select_related("type", "from_entry", "to_entry")
        .order_by("id")
    )


# --- the note rule --------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text or "")]


def check_note(note: str, target: Entry) -> str:
    """A note says how the other entry pertains, never what it says: refuse one that repeats
    ``NOTE_COPY_WORDS`` or more consecutive words of the target's own text."""
    if not isinstance(note, str):
        raise InvalidInput(
            "note must be a string.", code="invalid_note", fields={"note": "Must be a string."}
        )
    note = note.strip()
    if len(note) > NOTE_MAX:
        raise InvalidInput(
            f"note must be at most {NOTE_MAX} characters.",
            code="invalid_note",
            fields={"note": "Too long."},
        )
    words = _words(note)
    if len(words) < NOTE_COPY_WORDS:
        return note
    target_words = _words(
        " ".join([target.title, target.summary, target.content, target.useful_for])
    )
    n = NOTE_COPY_WORDS
    grams = {tuple(target_words[i : i + n]) for i in range(len(target_words) - n + 1)}
    for i in range(len(words) - n + 1):
        if tuple(words[i : i + n]) in grams:
            copied = " ".join(words[i : i + n])
            raise InvalidInput(
                f'The note repeats the target\'s own text ("{copied}…"). A note says how the other '
                "entry pertains — why a reader would go there — never what it says.",
                code="note_repeats_target",
                fields={"note": "Repeats the target's text."},
            )
    return note


# --- link -----------------------------------------------------------------------------------


@dataclass
class LinkRequest:
    """A validated edge to write."""

    from_entry: Entry
    to_entry: Entry
    type: EdgeType
    note: str = ""
    evidence: dict | None = None
    label: str = ""
    valid_from: dt.datetime | None = None
    valid_to: dt.datetime | None = None
    source: str = EdgeSource.AUTHOR


def _entry(bank: Bank, ref: Any, field: str) -> Entry:
    if isinstance(ref, Entry):
        if ref.bank_id != bank.pk:
            raise InvalidInput(
                f"{field} is not an entry of this bank.",
                code="entry_outside_bank",
                fields={field: "Outside the bank."},
            )
        return ref
    if not isinstance(ref, str) or not ref:
        raise InvalidInput(
            f"{field} must be an entry id.", code="invalid_edge", fields={field: "Required."}
        )
    try:
        return find_entry(bank, ref)
    except NotFound:
        raise InvalidInput(
            f"{field} names no entry of this bank: {ref!r}.",
            code="entry_outside_bank",
            fields={field: "Unknown entry."},
        ) from None


def clean_link(
    bank: Bank,
    data: dict,
    *,
    types: dict[str, EdgeType] | None = None,
    source: str = EdgeSource.AUTHOR,
) -> LinkRequest:
    """Validate a link payload ``{"from", "to", "relation", "note", "evidence", "valid_from", "valid_to", "label"}``."""
    if not isinstance(data, dict):
        raise InvalidInput("The body must be a JSON object.", code="invalid_body")
    allowed = {
        "from",
        "to",
        "relation",
        "note",
        "evidence",
        "valid_from",
        "valid_to",
        "label",
        "source",
    }
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise InvalidInput(
            f"Unknown fields: {', '.join(unknown)}.",
            code="invalid_edge",
            fields=dict.fromkeys(unknown, "Unknown field."),
        )
    from_entry = _entry(bank, data.get("from"), "from")
    to_entry = _entry(bank, data.get("to"), "to")
    if from_entry.pk == to_entry.pk:
        raise InvalidInput(
            "An edge cannot join an entry to itself.",
            code="self_loop",
            fields={"to": "Same as from."},
        )
    etype = edge_type(bank, data.get("relation"), types)
    label = data.get("label") or ""
    if not isinstance(label, str) or len(label) > 200:
        raise InvalidInput(
            "label must be a string of at most 200 characters.",
            code="invalid_edge",
            fields={"label": "Invalid."},
        )
    if etype.name == "other" and not label.strip():
        raise InvalidInput(
            "An 'other' relation needs a 'label' naming it.",
            code="invalid_edge",
            fields={"label": "Required for other."},
        )
    evidence = data.get("evidence") or {}
    if isinstance(evidence, str):
        evidence = {"text": evidence}
    if not isinstance(evidence, dict):
        raise InvalidInput(
            "evidence must be an object or a string.",
            code="invalid_edge",
            fields={"evidence": "Invalid."},
        )
    valid_from = parse_instant(data.get("valid_from"), "valid_from")
    valid_to = parse_instant(data.get("valid_to"), "valid_to")
    if valid_from and valid_to and valid_from >= valid_to:
        raise InvalidInput(
            "valid_from must be before valid_to.",
            code="invalid_interval",
            fields={"valid_to": "Not after valid_from."},
        )
    note = check_note(data.get("note") or "", to_entry)
    return LinkRequest(
        from_entry,
        to_entry,
        etype,
        note,
        evidence,
        label.strip(),
        valid_from,
        valid_to,
        data.get("source") or source,
    )


def _overlapping(req: LinkRequest) -> QuerySet[Edge]:
    return Edge.objects.filter(
        overlapping_q(req.valid_from, req.valid_to),
        from_entry=req.from_entry,
        to_entry=req.to_entry,
        type=req.type,
        invalidated_at__isnull=True,
    )


def lock_entries(
    ids: Iterable[int], *, exclusive: bool = False
) -> dict[int, tuple[str, int | None]]:
    """Lock entry rows in id order (so concurrent writers cannot deadlock) and return their
    current (status, merged_into) as committed now. Links share the lock; merges and deletes
    take it exclusively, so an edge is never written to an entry being merged away."""
    mode = "UPDATE" if exclusive else "SHARE"
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT id, status, merged_into_id FROM kb_entry WHERE id = ANY(%s) ORDER BY id FOR {mode}",
            [sorted(set(ids))],
        )
        return {row[0]: (row[1], row[2]) for row in cur.fetchall()}


def _require_linkable(req: LinkRequest) -> None:
    states = lock_entries([req.from_entry.pk, req.to_entry.pk])
    for entry in (req.from_entry, req.to_entry):
        status, merged_into = states.get(entry.pk, ("deleted", None))
        if status == "merged":
            raise Conflict(
                f"Entry {entry.short_id} was merged into another entry meanwhile; link the survivor instead.",
                code="entry_merged",
            )
        if status == "deleted":
            raise Conflict(f"Entry {entry.short_id} was deleted meanwhile.", code="entry_deleted")


def check_not_believed(req: LinkRequest) -> None:
    """409 when the triple of ``req`` is already believed for an overlapping valid time
    (``duplicate_edge`` when that edge is current). ``write_edge`` runs it; a form may run it
    first to show the error on the page."""
    clash = _overlapping(req).first()
    if clash is None:
        return
    if clash.is_current():
        raise Conflict(
            f"The edge {req.from_entry.short_id} -{req.type.name}-> {req.to_entry.short_id} already exists.",
            code="duplicate_edge",
            extra={"edge_id": clash.pk},
        )
    raise Conflict(
        "This edge overlaps the valid time of an earlier version of the same edge; give a valid_from after it ends.",
        code="edge_overlaps_history",
        extra={"edge_id": clash.pk},
    )


def edge_row(
    bank: Bank, req: LinkRequest, actor: str, now, *, replaces: Edge | None = None
) -> Edge:
    """The unsaved edge row a checked link request makes (one write or a set-wise insert)."""
    return Edge(
        bank=bank,
        from_entry=req.from_entry,
        to_entry=req.to_entry,
        type=req.type,
        label=req.label,
        note=req.note,
        evidence=req.evidence or {},
        source=req.source,
        actor=actor,
        valid_from=req.valid_from,
        valid_to=req.valid_to,
        recorded_at=now,
        replaces=replaces,
    )


def write_edge(bank: Bank, req: LinkRequest, *, replaces: Edge | None = None) -> Edge:
    """Insert one edge row inside the caller's operation; 409 if the triple is already believed
    or an end was merged away or deleted meanwhile."""
    _require_linkable(req)
    check_not_believed(req)
    edge = edge_row(bank, req, audit.current().actor, timezone.now(), replaces=replaces)
    try:
        with transaction.atomic():
            edge.save()
    except IntegrityError as exc:  # a concurrent writer won the race on the exclusion constraint
        raise Conflict(
            f"The edge {req.from_entry.short_id} -{req.type.name}-> {req.to_entry.short_id} already exists.",
            code="duplicate_edge",
        ) from exc
    return edge


def link(
    bank: Bank,
    data: dict,
    *,
    reason: str = "",
    actor: str | None = None,
    source: str = EdgeSource.AUTHOR,
) -> Edge:
    """Create an edge (one ``link`` operation)."""
    req = clean_link(bank, data, source=source)
    with unit_of_work(bank, OperationKind.LINK, reason=reason, actor=actor) as op:
        edge = write_edge(bank, req)
        audit.record(op, edges=[*op.details.get("edges", []), edge.pk])
    return edge


# --- unlink, retype, invalidate, correct ------------------------------------------------------


def get_edge(bank: Bank, edge_id: Any) -> Edge:
    pk = parse_int_id(edge_id, "edge_id")
    edge = (
        Edge.objects.filter(bank=bank, pk=pk)
        .select_related("type", "from_entry", "to_entry")
        .first()
    )
    if edge is None:
        raise NotFound(f"No edge {edge_id!r} in this bank.", code="edge_not_found")
    return edge


def _require_reason(reason: Any) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInput(
            "A reason is required.", code="reason_required", fields={"reason": "Required."}
        )
    return reason.strip()


def _require_open(edge: Edge) -> None:
    if edge.invalidated_at is not None:
        raise Conflict(
            f"Edge {edge.pk} was already closed at {edge.invalidated_at.isoformat()}; it can no longer change.",
            code="edge_closed",
        )


def close_edge(edge: Edge, reason: str, when: dt.datetime | None = None) -> Edge:
    """End an edge's transaction interval (the row stays for as-of queries)."""
    edge.invalidated_at = when or timezone.now()
    edge.invalidated_reason = reason
    edge.save(update_fields=["invalidated_at", "invalidated_reason"])
    return edge


def unlink(bank: Bank, edge_id: Any, reason: Any, *, actor: str | None = None) -> Edge:
    """Retract an edge: close its transaction interval (one ``unlink`` operation)."""
    reason = _require_reason(reason)
    with unit_of_work(bank, OperationKind.UNLINK, reason=reason, actor=actor) as op:
        edge = Edge.objects.select_for_update(of=("self",)).get(pk=get_edge(bank, edge_id).pk)
        _require_open(edge)
        close_edge(edge, reason)
        audit.record(op, edges=[edge.pk])
    return edge


def unlink_many(
    bank: Bank, edge_ids: Iterable[Any], reason: Any, *, actor: str | None = None
) -> list[Edge]:
    """Close several edges of ``bank`` with one reason: one ``unlink`` operation (one
    reviewable, revertible unit for one curator action)."""
    reason = _require_reason(reason)
    ids = list(dict.fromkeys(edge_ids))
    if not ids:
        raise InvalidInput(
            "Name at least one edge to unlink.", code="invalid_input", fields={"edges": "Empty."}
        )
    with unit_of_work(bank, OperationKind.UNLINK, reason=reason, actor=actor) as op:
        closed = [unlink(bank, edge_id, reason, actor=actor) for edge_id in ids]
        audit.record(op, edges=[e.pk for e in closed])
    return closed


def _lock_edge_and_ends(bank: Bank, edge_id: Any) -> Edge:
    """Lock the edge's ends (shared), then the edge: the order merges use (entries, then
    edges), so a retype or invalidate racing a merge waits instead of deadlocking."""
    found = get_edge(bank, edge_id)
    lock_entries([found.from_entry_id, found.to_entry_id])
    return (
        Edge.objects.select_for_update(of=("self",))
        .select_related("type", "from_entry", "to_entry")
        .get(pk=found.pk)
    )


def _successor(edge: Edge, **changes) -> LinkRequest:
    fields = {
        "from_entry": edge.from_entry,
        "to_entry": edge.to_entry,
        "type": edge.type,
        "note": edge.note,
        "evidence": edge.evidence,
        "label": edge.label,
        "valid_from": edge.valid_from,
        "valid_to": edge.valid_to,
        "source": edge.source,
    }
    fields.update(changes)
    return LinkRequest(**fields)


def retype(
    bank: Bank,
    edge_id: Any,
    relation: Any,
    reason: Any,
    *,
    actor: str | None = None,
    label: str = "",
) -> Edge:
    """Change an edge's relation: close the row and append the retyped one."""
    reason = _require_reason(reason)
    new_type = edge_type(bank, relation)

    def retyped(edge: Edge) -> dict:
        if new_type.pk == edge.type_id:
            raise InvalidInput(
                f"The edge is already {new_type.name}.",
                code="same_relation",
                fields={"relation": "Unchanged."},
            )
        if new_type.name == "other" and not (label or edge.label):
            raise InvalidInput(
                "An 'other' relation needs a 'label'.",
                code="invalid_edge",
                fields={"label": "Required."},
            )
        return {"type": new_type, "label": label or edge.label}

    return _replace_edge(bank, edge_id, reason, actor, OperationKind.RETYPE, "retyped", retyped)


def renote(bank: Bank, edge_id: Any, note: Any, reason: Any, *, actor: str | None = None) -> Edge:
    """Correct an edge's note: close the row and append the same edge with the new note (as
    every correction does), so the old note stays readable with ``as_of``."""
    reason = _require_reason(reason)
    if note is None:
        raise InvalidInput("note is required.", code="invalid_note", fields={"note": "Required."})

    def renoted(edge: Edge) -> dict:
        new_note = check_note(note, edge.to_entry)
        if new_note == edge.note:
            raise InvalidInput(
                "The edge already carries this note.",
                code="same_note",
                fields={"note": "Unchanged."},
            )
        return {"note": new_note}

    return _replace_edge(bank, edge_id, reason, actor, OperationKind.RENOTE, "renoted", renoted)


def invalidate(
    bank: Bank, edge_id: Any, valid_to: Any, reason: Any, *, actor: str | None = None
) -> Edge:
    """Close an edge's valid time without losing the old belief: close the row's transaction
    interval and append the same edge with ``valid_to`` set."""
    reason = _require_reason(reason)
    end = parse_instant(valid_to, "valid_to")
    if end is None:
        raise InvalidInput(
            "valid_to is required.", code="invalid_time", fields={"valid_to": "Required."}
        )

    def ended(edge: Edge) -> dict:
        if edge.valid_from is not None and end <= edge.valid_from:
            raise InvalidInput(
                "valid_to must be after the edge's valid_from.",
                code="invalid_interval",
                fields={"valid_to": "Too early."},
            )
        return {"valid_to": end}

    return _replace_edge(bank, edge_id, reason, actor, OperationKind.INVALIDATE, "ended", ended)


def _replace_edge(
    bank: Bank,
    edge_id: Any,
    reason: str,
    actor: str | None,
    kind: str,
    verb: str,
    changes: Callable[[Edge], dict],
) -> Edge:
    """Lock the edge and its ends, let ``changes`` validate and name the new values, close the
    row and append its successor: one operation of ``kind``."""
    with unit_of_work(bank, kind, reason=reason, actor=actor) as op:
        edge = _lock_edge_and_ends(bank, edge_id)
        _require_open(edge)
        fields = changes(edge)
        close_edge(edge, f"{verb}: {reason}")
        successor = write_edge(bank, _successor(edge, **fields), replaces=edge)
        audit.record(op, closed=[edge.pk], appended=[successor.pk])
    return successor


def correct_edges(
    bank: Bank,
    close: Iterable[int],
    append: Iterable[dict],
    reason: str,
    *,
    actor: str | None = None,
) -> dict:
    """The correction workflow of ``004_*`` 12.6 as one operation: close the old beliefs'
    transaction intervals, append the corrected versions with their valid intervals, and
    report old and new edge ids (the correction event). The input's shape (edge ids, edge
    objects, something to do, a reason) is ``graph.actions.traverse.CorrectEdges``'s
    declaration's; each edge's relation, ends and note are checked here, on the bank."""
    close = list(close)
    append = list(append)
    types = edge_types_for_bank(bank)
    with unit_of_work(
        bank, OperationKind.INVALIDATE, reason=reason, actor=actor, correction=True
    ) as op:
        closed = []
        for edge_id in close:
            edge = Edge.objects.select_for_update(of=("self",)).get(pk=get_edge(bank, edge_id).pk)
            _require_open(edge)
            closed.append(close_edge(edge, f"corrected: {reason}"))
        appended = []
        for i, item in enumerate(append):
            try:
                req = clean_link(bank, {**item, "source": EdgeSource.CORRECTION}, types=types)
            except InvalidInput as exc:
                exc.message = f"append[{i}]: {exc.message}"
                raise
            replaces = closed[0] if len(closed) == 1 else None
            appended.append(write_edge(bank, req, replaces=replaces))
        audit.record(op, closed=[e.pk for e in closed], appended=[e.pk for e in appended])
    return {
        "operation": op.pk,
        "closed": [e.pk for e in closed],
        "appended": [e.pk for e in appended],
    }
