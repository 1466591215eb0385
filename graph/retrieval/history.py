"""Both clocks end to end: an entry as the bank believed it at a past instant, and what changed
around an entry between two instants.

- ``entry_as_of``: the entry's fields from its simple-history row current at ``as_of`` (the
  latest row with ``history_date`` ≤ ``as_of``); its edges believed at ``as_of`` (transaction
  time) and valid at ``valid_at`` (valid time, default ``as_of``); its aliases at ``as_of``.
- ``changed_between``: every edge touching the entry that was recorded or closed in
  ``[t1, t2)``, reported with both clocks, plus the entry's own versions in that window.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q
from django.utils import timezone

from graph.edges.clocks import parse_instant
from graph.edges.links import believed_q, valid_q
from graph.models import Alias, Edge
from kb.errors import InvalidInput, NotFound
from kb.models import Bank, Entry, EntryStatus
from kb.presenters import entry_detail, iso

HISTORY_TYPES = {"+": "created", "~": "changed", "-": "deleted"}


def _instant(value: Any, field_name: str, *, required: bool = True) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise InvalidInput(
                f"{field_name} must carry a time zone.",
                code="invalid_time",
                fields={field_name: "Needs a time zone."},
            )
        return value
    when = parse_instant(value, field_name, require_zone=True)
    if when is None and required:
        raise InvalidInput(
            f"{field_name} is required (an ISO 8601 timestamp with a zone).",
            code="invalid_time",
            fields={field_name: "Required."},
        )
    return when


def _historical_entries():
    return Entry.history.model.objects


def _version_at(bank: Bank, entry_pk: int, when: dt.datetime):
    return (
        _historical_entries()
        .filter(bank_id=bank.pk, id=entry_pk, history_date__lte=when)
        .order_by("-history_date", "-history_id")
        .first()
    )


def _find_version(bank: Bank, ref: str, when: dt.datetime):
    """The entry's row current at ``when``, found by short_id, else by the key it had then."""
    ref = (ref or "").strip()
    if not ref:
        return None
    for lookup in ({"short_id": ref.lower()}, {"key": ref}):
        named = (
            _historical_entries()
            .filter(bank_id=bank.pk, history_date__lte=when, **lookup)
            .order_by("-history_date", "-history_id")
            .values_list("id", flat=True)
            .first()
        )
        if named is None:
            continue
        row = _version_at(bank, named, when)
        if row is not None and (row.short_id == ref.lower() or row.key == ref):
            return row
    return None


def _missing(ref: str, bank: Bank, when: dt.datetime) -> NotFound:
    return NotFound(
        f"No entry {ref!r} existed in bank {bank.slug!r} at {when.isoformat()}.",
        code="entry_not_found",
    )


def entry_as_of(bank: Bank, ref: str, as_of: Any, valid_at: Any = None) -> dict:
    """What the bank believed about entry ``ref`` at ``as_of`` (an ISO timestamp with a zone):
    the entry-detail shape of API.md from the history row current then (404
    ``entry_not_found`` if it did not exist yet or was deleted), its edges believed at
    ``as_of`` and valid at ``valid_at`` (default ``as_of``) with the other ends' titles of
    that time, and its aliases of that time. A merged id answers its survivor as of then."""
    when = _instant(as_of, "as_of")
    valid = parse_instant(valid_at, "valid_at") or when
    row = _find_version(bank, ref, when)
    if row is None or row.history_type == "-" or row.status == EntryStatus.DELETED:
        raise _missing(ref, bank, when)
    merged_from = None
    seen = {row.id}
    while (
        row.status == EntryStatus.MERGED and row.merged_into_id and row.merged_into_id not in seen
    ):
        seen.add(row.merged_into_id)
        survivor = _version_at(bank, row.merged_into_id, when)
        if survivor is None or survivor.history_type == "-":
            break
        merged_from, row = ref, survivor
    entry = row.instance
    data = entry_detail(entry, merged_from=merged_from)
    data["usage_count"] = None  # usage is not historical: it is not kept in the history rows
    data["edges"] = _edges_as_of(bank, entry.pk, when, valid)
    data["aliases"] = _aliases_as_of(bank, entry.pk, when)
    data["as_of"] = iso(when)
    data["valid_at"] = iso(valid)
    data["version"] = {
        "history_id": row.history_id,
        "history_date": iso(row.history_date),
        "change": HISTORY_TYPES.get(row.history_type, row.history_type),
        "operation": row.operation_id,
        "actor": row.history_actor,
    }
    return data


def _titles_as_of(bank: Bank, pks: set[int], when: dt.datetime) -> dict[int, tuple[str, str, str]]:
    """short_id, title and summary of ``pks`` as of ``when`` (one statement; the present row
    for an entry without history, e.g. one loaded by raw SQL)."""
    rows = (
        _historical_entries()
        .filter(bank_id=bank.pk, id__in=pks, history_date__lte=when)
        .order_by("id", "-history_date", "-history_id")
        .distinct("id")
        .values_list("id", "short_id", "title", "summary")
    )
    found = {pk: (sid, title, summary) for pk, sid, title, summary in rows}
    missing = pks - set(found)
    if missing:
        for pk, sid, title, summary in Entry.objects.filter(bank=bank, pk__in=missing).values_list(
            "pk", "short_id", "title", "summary"
        ):
            found[pk] = (sid, title, summary)
    return found


def _edges_as_of(bank: Bank, pk: int, when: dt.datetime, valid: dt.datetime) -> list[dict]:
    edges = list(
        Edge.objects.filter(bank=bank)
        .filter(Q(from_entry_id=pk) | Q(to_entry_id=pk))
        .filter(believed_q(when) & valid_q(valid))
        .select_related("type")
        .order_by("id")
    )
    others = {e.to_entry_id if e.from_entry_id == pk else e.from_entry_id for e in edges}
    titles = _titles_as_of(bank, others, when) if others else {}
    out = []
    for edge in edges:
        outgoing = edge.from_entry_id == pk
        sid, title, summary = titles[edge.to_entry_id if outgoing else edge.from_entry_id]
        out.append(
            {
                "edge_id": edge.pk,
                "relation": edge.type.name,
                "direction": "out" if outgoing else "in",
                "note": edge.note,
                "entry": {"id": sid, "title": title, "summary": summary},
                "valid_from": iso(edge.valid_from),
                "valid_to": iso(edge.valid_to),
                "recorded_at": iso(edge.recorded_at),
                "invalidated_at": iso(edge.invalidated_at),
            }
        )
    return out


def _aliases_as_of(bank: Bank, pk: int, when: dt.datetime) -> list[str]:
    history = Alias.history.model.objects
    ever = history.filter(bank_id=bank.pk, entry_id=pk, history_date__lte=when).values("id")
    latest = (
        history.filter(bank_id=bank.pk, id__in=ever, history_date__lte=when)
        .order_by("id", "-history_date", "-history_id")
        .distinct("id")
        .values_list("entry_id", "history_type", "surface")
    )
    return sorted(surface for entry_id, kind, surface in latest if entry_id == pk and kind != "-")


# --- changed_between --------------------------------------------------------------------------


@dataclass
class ChangeReport:
    """Changes around one entry in ``[since, until)`` of transaction time, oldest first."""

    bank: Bank
    entry: Entry
    since: dt.datetime
    until: dt.datetime
    edge_changes: list[dict] = field(default_factory=list)
    entry_changes: list[dict] = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "entity": {"id": self.entry.short_id, "title": self.entry.title},
            "from": iso(self.since),
            "to": iso(self.until),
            "edge_changes": self.edge_changes,
            "entry_changes": self.entry_changes,
            "counts": {
                "edge_changes": len(self.edge_changes),
                "entry_changes": len(self.entry_changes),
            },
            "searched": {
                "bank": self.bank.slug,
                "start": {"id": self.entry.short_id},
                "clock": "transaction time (recorded_at, invalidated_at)",
                "from": iso(self.since),
                "to": iso(self.until),
                "truncated": False,
            },
        }


def changed_between(bank: Bank, entry: Entry, since: Any, until: Any = None) -> ChangeReport:
    """Edges touching ``entry`` recorded or invalidated in ``[since, until)`` (``until``
    default now), each with both clocks and the operation that made the change, plus the
    entry's own history rows in the window. Three statements whatever the number of edges."""
    start = _instant(since, "from")
    end = _instant(until, "to", required=False) or timezone.now()
    if start >= end:
        raise InvalidInput(
            "from must be before to.", code="invalid_interval", fields={"to": "Not after from."}
        )
    if entry.bank_id != bank.pk:
        raise NotFound("No such entry in this bank.", code="entry_not_found")
    recorded = Q(recorded_at__gte=start, recorded_at__lt=end)
    closed = Q(invalidated_at__gte=start, invalidated_at__lt=end)
    edges = list(
        Edge.objects.filter(bank=bank)
        .filter(Q(from_entry_id=entry.pk) | Q(to_entry_id=entry.pk))
        .filter(recorded | closed)
        .select_related("type", "from_entry", "to_entry")
        .order_by("id")
    )
    operations = _edge_operations([e.pk for e in edges])
    report = ChangeReport(bank, entry, start, end)
    for edge in edges:
        outgoing = edge.from_entry_id == entry.pk
        other = edge.to_entry if outgoing else edge.from_entry
        base = {
            "edge_id": edge.pk,
            "relation": edge.type.name,
            "direction": "out" if outgoing else "in",
            "entry": {"id": other.short_id, "title": other.title},
            "note": edge.note,
            "valid_from": iso(edge.valid_from),
            "valid_to": iso(edge.valid_to),
            "recorded_at": iso(edge.recorded_at),
            "invalidated_at": iso(edge.invalidated_at),
            "replaces": edge.replaces_id,
        }
        if start <= edge.recorded_at < end:
            op = operations.get((edge.pk, "recorded"))
            report.edge_changes.append(
                {"at": iso(edge.recorded_at), "change": "recorded", "operation": op, **base}
            )
        if edge.invalidated_at is not None and start <= edge.invalidated_at < end:
            op = operations.get((edge.pk, "invalidated"))
            report.edge_changes.append(
                {
                    "at": iso(edge.invalidated_at),
                    "change": "invalidated",
                    "reason": edge.invalidated_reason,
                    "operation": op,
                    **base,
                }
            )
    report.edge_changes.sort(key=lambda change: (change["at"], change["edge_id"]))
    versions = (
        _historical_entries()
        .filter(bank_id=bank.pk, id=entry.pk, history_date__gte=start, history_date__lt=end)
        .order_by("history_date", "history_id")
        .values_list(
            "history_date", "history_type", "operation_id", "history_actor", "title", "status"
        )
    )
    report.entry_changes = [
        {
            "at": iso(when),
            "change": HISTORY_TYPES.get(kind, kind),
            "operation": op,
            "actor": actor,
            "title": title,
            "status": status,
        }
        for when, kind, op, actor, title, status in versions
    ]
    return report


def _edge_operations(edge_ids: list[int]) -> dict[tuple[int, str], int | None]:
    """(edge id, "recorded" | "invalidated") → the operation of the history row that did it."""
    if not edge_ids:
        return {}
    rows = (
        Edge.history.model.objects.filter(id__in=edge_ids)
        .order_by("history_date", "history_id")
        .values_list("id", "history_type", "invalidated_at", "operation_id")
    )
    found: dict[tuple[int, str], int | None] = {}
    for edge_id, kind, invalidated_at, op in rows:
        if kind == "+":
            found.setdefault((edge_id, "recorded"), op)
        elif invalidated_at is not None:
            found.setdefault((edge_id, "invalidated"), op)
    return found
