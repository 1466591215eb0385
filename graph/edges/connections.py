"""A new entry's connections, written set-wise inside its create operation (issue 24).

Each connection is checked in order by the rules of a single link (:func:`clean_link`: an
entry of this bank as the target — a merged id names its survivor —, a known relation, the
note rule, the clocks), and the first bad one is reported as ``connections[i]``, as before.
One statement reads and share-locks every target, one inserts the edges, one their history
rows: a constant number of statements whatever the number of connections (an id naming a
merged or deleted entry, or none, is looked up on its own, to answer as a single link does).

What a single link asks the database before it writes (is the triple already believed?)
cannot be true here: the entry was created in this transaction, so no committed row has it
as an end. A connection repeating an earlier one of the same request (same target and
relation, overlapping valid time) is refused from the rows in hand, as the link would refuse
it (``duplicate_edge``, or ``edge_overlaps_history`` when the earlier one is not current).
"""

from __future__ import annotations

import functools

from django.db import IntegrityError
from django.utils import timezone

from graph.edges.clocks import intervals_overlap
from graph.edges.links import LinkRequest, clean_link, edge_row, lock_entries
from graph.edges.vocab import edge_types_for_bank
from graph.models import Edge
from kb import audit
from kb.errors import Conflict, InvalidInput, KbError
from kb.history_rows import record_rows
from kb.models import Bank, Entry, EntryStatus

CONNECTION_FIELDS = frozenset(
    {"id", "relation", "note", "evidence", "label", "valid_from", "valid_to"}
)


def link_connections(bank: Bank, entry: Entry, connections: list) -> list[Edge]:
    """Write a new entry's ``connections`` (entry → other) inside the caller's operation."""
    types = edge_types_for_bank(bank)
    targets = _locked_targets(bank, connections)
    requests: list[LinkRequest] = []
    for i, item in enumerate(connections):
        if not isinstance(item, dict) or set(item) - CONNECTION_FIELDS:
            raise InvalidInput(
                f"connections[{i}] must be an object with id, relation and an optional note.",
                code="invalid_connection",
                fields={"connections": f"Item {i} is malformed."},
            )
        ref = item.get("id")
        payload = {k: v for k, v in item.items() if k != "id"}
        found = targets.get(ref.strip()) if isinstance(ref, str) else None
        payload.update({"from": entry, "to": found or ref})
        try:
            req = clean_link(bank, payload, types=types)
            _refuse_repeat(req, requests)
        except (InvalidInput, Conflict) as exc:
            raise _at(i, exc) from None
        requests.append(req)
    locked = {e.pk for e in targets.values()}
    _lock_ends([(i, req) for i, req in enumerate(requests) if req.to_entry.pk not in locked])
    return _insert(bank, requests)


# The live targets, read and share-locked in one statement (id order, as every link locks):
# a merge or delete of a target waits for this write, as it waits for a link.
_TARGETS_SQL = """
SELECT {columns} FROM kb_entry
 WHERE bank_id = %s AND (short_id = ANY(%s) OR key = ANY(%s))
 ORDER BY id
   FOR SHARE
"""


@functools.cache
def _targets_sql() -> str:
    return _TARGETS_SQL.format(columns=", ".join(f.column for f in Entry._meta.concrete_fields))


def _locked_targets(bank: Bank, connections: list) -> dict[str, Entry]:
    """The live entries the connections' ids name (short_id first, then key, as
    :func:`~kb.services.entries.find_entry` reads them), locked. An id naming a merged,
    deleted or no entry is left out: :func:`clean_link` looks it up alone and answers as a
    link does (a merged id names its survivor, locked by :func:`_lock_ends`)."""
    refs = sorted(
        {
            item["id"].strip()
            for item in connections
            if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"].strip()
        }
    )
    if not refs:
        return {}
    rows = list(Entry.objects.raw(_targets_sql(), [bank.pk, refs, refs]))
    by_id = {e.short_id: e for e in rows}
    by_key = {e.key: e for e in rows if e.key}
    out = {}
    for ref in refs:
        entry = by_id.get(ref) or by_key.get(ref)
        if entry is not None and entry.status not in (EntryStatus.MERGED, EntryStatus.DELETED):
            out[ref] = entry
    return out


def _refuse_repeat(req: LinkRequest, earlier: list[LinkRequest]) -> None:
    for other in earlier:
        if (other.to_entry.pk, other.type.pk) != (req.to_entry.pk, req.type.pk):
            continue
        if not intervals_overlap(req.valid_from, req.valid_to, other.valid_from, other.valid_to):
            continue
        ends = f"{req.from_entry.short_id} -{req.type.name}-> {req.to_entry.short_id}"
        clash = Edge(valid_from=other.valid_from, valid_to=other.valid_to)
        if clash.is_current():
            raise Conflict(f"The edge {ends} already exists.", code="duplicate_edge")
        raise Conflict(
            "This edge overlaps the valid time of an earlier version of the same edge; give a "
            "valid_from after it ends.",
            code="edge_overlaps_history",
        )


def _lock_ends(numbered: list[tuple[int, LinkRequest]]) -> None:
    """Share-lock the targets not locked when read (a merged id's survivor; one statement,
    none when there is none); one merged away or deleted since is a 409 on its connection.
    The new entry needs no lock: no other transaction can see it yet."""
    if not numbered:
        return
    states = lock_entries([req.to_entry.pk for _, req in numbered])
    for i, req in numbered:
        target = req.to_entry
        status, _ = states.get(target.pk, ("deleted", None))
        if status == "merged":
            raise _at(
                i,
                Conflict(
                    f"Entry {target.short_id} was merged into another entry meanwhile; link "
                    "the survivor instead.",
                    code="entry_merged",
                ),
            )
        if status == "deleted":
            raise _at(
                i, Conflict(f"Entry {target.short_id} was deleted meanwhile.", code="entry_deleted")
            )


def _insert(bank: Bank, requests: list[LinkRequest]) -> list[Edge]:
    """The edges in one INSERT and their history rows in one more (stamped with the
    operation, as every row written inside it)."""
    if not requests:
        return []
    now = timezone.now()
    actor = audit.current().actor
    rows = [edge_row(bank, req, actor, now) for req in requests]
    try:
        created = Edge.objects.bulk_create(rows)
    except IntegrityError as exc:  # the database's edge rules, should a check above miss one
        raise Conflict(
            "connections: an edge of this learning clashes with one the bank holds.",
            code="duplicate_edge",
            fields={"connections": "An edge clashes with an existing one."},
        ) from exc
    record_rows(Edge, [e.pk for e in created], "+", when=now)
    return created


def _at(i: int, exc: KbError) -> KbError:
    """``exc`` as the error of ``connections[i]``."""
    exc.fields = {"connections": f"Item {i}: {exc.message}"}
    exc.message = f"connections[{i}]: {exc.message}"
    return exc
