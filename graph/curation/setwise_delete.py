"""Delete with bridging in a constant number of statements.

The rules are those of ``delete_entry`` (graph.curation.delete): every current X→B→Y
becomes X→Y, with the hops' relation when both hops share it and it is transitive, else
``see_also``, with evidence naming B and both hops; a bridge whose triple X→Y is already
current (or believed over its whole valid time) is not written. Then B's edges close and its
aliases go. Bridges are planned in Python over two reads and written with set-wise
statements, each with its history rows.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from graph.curation.edge_rows import append_edges, close_edges
from graph.edges.links import current_q, lock_entries
from graph.models import Alias, Edge, EdgeSource
from kb.errors import Conflict
from kb.models import Bank, Entry, EntryStatus


@dataclass
class DeleteWrite:
    bridged: int
    skipped: int
    closed: list[int]


def _believed_of(triples: set[tuple[int, int, int]]) -> dict[tuple, list[tuple]]:
    """Believed (valid_from, valid_to) of each triple, in one statement."""
    if not triples:
        return {}
    rows = list(triples)
    with connection.cursor() as cur:
        cur.execute(
            "SELECT e.from_entry_id, e.to_entry_id, e.type_id, e.valid_from, e.valid_to "
            "FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS u(f, t, ty) "
            "JOIN graph_edge e ON e.from_entry_id = u.f AND e.to_entry_id = u.t "
            "AND e.type_id = u.ty AND e.invalidated_at IS NULL",
            [[r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]],
        )
        found: dict[tuple, list[tuple]] = {}
        for f, t, ty, lo, hi in cur.fetchall():
            found.setdefault((f, t, ty), []).append((lo, hi))
    return found


def _current(lo, hi, now: dt.datetime) -> bool:
    return (lo is None or lo <= now) and (hi is None or now < hi)


def apply_delete(bank: Bank, entry: Entry, reason: str, types: dict, op) -> DeleteWrite:
    """Bridge over ``entry``, close its edges, drop its aliases and mark it deleted, inside the
    open operation ``op``; the caller holds the entry's exclusive lock."""
    from graph.curation.merge import uncovered_interval
    from graph.curation.setwise_revert import delete_rows

    now = timezone.now()
    edges = list(
        Edge.objects.select_for_update(of=("self",))
        .filter(bank=bank)
        .filter(Q(from_entry=entry) | Q(to_entry=entry))
        .filter(current_q(now))
        .select_related("type")
        .order_by("id")
    )
    incoming = [e for e in edges if e.to_entry_id == entry.pk]
    outgoing = [e for e in edges if e.from_entry_id == entry.pk]
    wanted = []
    for into in incoming:
        for out in outgoing:
            if into.from_entry_id == out.to_entry_id:
                continue
            shared = (
                into.type
                if into.type_id == out.type_id and into.type.transitive
                else types["see_also"]
            )
            wanted.append((into, out, shared))
    believed = _believed_of({(i.from_entry_id, o.to_entry_id, t.pk) for i, o, t in wanted})
    rows: list[Edge] = []
    skipped = 0
    for into, out, shared in wanted:
        triple = (into.from_entry_id, out.to_entry_id, shared.pk)
        same = believed.setdefault(triple, [])
        interval = (
            None
            if any(_current(lo, hi, now) for lo, hi in same)
            else uncovered_interval(None, None, same)
        )
        if interval is None:
            skipped += 1  # X→Y of that type already exists: the connection is kept
            continue
        same.append(interval)
        rows.append(
            Edge(
                bank=bank,
                from_entry_id=triple[0],
                to_entry_id=triple[1],
                type=shared,
                note=(
                    f"Bridged over deleted {entry.short_id} ({into.type.name}, "
                    f"then {out.type.name})."
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
                valid_from=interval[0],
                valid_to=interval[1],
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
    closed = close_edges({e.pk: f"entry {entry.short_id} deleted: {reason}" for e in edges}, now)
    aliases = list(Alias.objects.filter(bank=bank, entry=entry).values_list("pk", flat=True))
    delete_rows(Alias, sorted(aliases), when=now)
    entry.status = EntryStatus.DELETED
    entry.status_changed_at = now
    entry.save()
    return DeleteWrite(bridged=len(rows), skipped=skipped, closed=closed)
