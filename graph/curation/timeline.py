"""What happened to an entry, in words: one timeline of the entry's own versions, the edges
that touch it and its aliases, grouped by the operation that wrote them, with the operation's
actor and reason and entries named by their titles (never bare ids).

The same sentences describe what a revert will restore (:func:`describe_revert`), so the
history page, the operation page and the revert preview speak one language. Read-only.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db.models import Q

from graph.models import Alias, Edge, EdgeType
from kb.models import Entry, Operation

CHANGE = {"+": "created", "~": "changed", "-": "deleted"}
# Entry fields a curator reads as content; clocks and bookkeeping are left out of sentences.
ENTRY_WORDS = {
    "title": "title",
    "key": "key",
    "summary": "summary",
    "content": "content",
    "useful_for": "useful for",
    "kind_id": "kind",
    "systems": "systems",
    "tasks": "tasks",
    "steps": "steps",
    "metadata": "metadata",
    "durable": "lifetime",
    "expires_at": "lifetime",
    "resolved_by_id": "lifetime",
    "anchor_files": "anchors",
    "anchor_symbols": "anchors",
    "verified_at": "verification",
}
# Operations whose rows all belong in the story of an entry they touched (a merge moves the
# other entry's aliases and edges); for the rest only the entry's own rows are shown.
WHOLE_OPERATIONS = {"merge", "split", "delete", "revert"}
ROWS_PER_OPERATION = 60


@dataclass
class Change:
    model: str  # entry | edge | alias
    object_id: int
    change: str  # created | changed | deleted
    text: str


@dataclass
class TimelineOperation:
    """One operation (or, for rows written outside any, one moment) and what it changed."""

    operation: Operation | None
    when: dt.datetime
    actor: str
    reason: str
    kind: str
    changes: list[Change] = field(default_factory=list)
    more: int = 0  # rows of the operation not shown (large operations)


class Names:
    """Entry titles and relation names by id, fetched in two statements."""

    def __init__(self, entry_ids: set[int], type_ids: set[int]):
        self.entries = {
            pk: (sid, title)
            for pk, sid, title in Entry.objects.filter(pk__in=entry_ids).values_list(
                "pk", "short_id", "title"
            )
        }
        # History keeps the titles of entries that no longer exist.
        missing = entry_ids - set(self.entries)
        for pk, sid, title in (
            Entry.history.filter(id__in=missing)
            .order_by("id", "-history_id")
            .values_list("id", "short_id", "title")
        ):
            self.entries.setdefault(pk, (sid, title))
        self.types = dict(EdgeType.objects.filter(pk__in=type_ids).values_list("pk", "name"))

    def entry(self, pk: int | None) -> str:
        if pk is None:
            return "—"
        sid, title = self.entries.get(pk, ("?", "an entry no longer on record"))
        return f"“{title}” ({sid})"

    def relation(self, type_id: int) -> str:
        return self.types.get(type_id, "a relation")


def _names_of(rows: dict, priors: dict, entry_ids: set[int]) -> Names:
    """Names (titles, relations) of every entry and edge type the history rows and their
    prior versions mention, besides ``entry_ids``."""
    entry_ids = set(entry_ids)
    type_ids: set[int] = set()
    for name, items in rows.items():
        for r in [*items, *(p for p in priors[name].values() if p is not None)]:
            if name == "entry":
                entry_ids.add(r.id)
                if r.merged_into_id:
                    entry_ids.add(r.merged_into_id)
            elif name == "edge":
                entry_ids |= {r.from_entry_id, r.to_entry_id}
                type_ids.add(r.type_id)
            else:
                entry_ids.add(r.entry_id)
    return Names(entry_ids, type_ids)


def _edge_words(row, names: Names) -> str:
    label = f" ({row.label})" if getattr(row, "label", "") else ""
    return (
        f"{names.entry(row.from_entry_id)} —{names.relation(row.type_id)}{label}→ "
        f"{names.entry(row.to_entry_id)}"
    )


def describe(model: str, before, after, names: Names) -> str:
    """One sentence for a row going from ``before`` to ``after`` (either may be None)."""
    if model == "edge":
        row = after or before
        if before is None:
            text = f"Linked {_edge_words(row, names)}"
            return text + (f": {row.note}" if row.note else "")
        if after is None:
            return f"Removed the record of {_edge_words(row, names)}"
        if before.invalidated_at is None and after.invalidated_at is not None:
            why = f": {after.invalidated_reason}" if after.invalidated_reason else ""
            return f"Unlinked {_edge_words(after, names)}{why}"
        if before.invalidated_at is not None and after.invalidated_at is None:
            return f"Reopened {_edge_words(after, names)}"
        changed = [
            f
            for f in ("type_id", "note", "label", "valid_from", "valid_to")
            if getattr(before, f) != getattr(after, f)
        ]
        words = ", ".join(f.replace("_id", "").replace("type", "relation") for f in changed)
        return f"Changed {words or 'nothing visible of'} {_edge_words(after, names)}"
    if model == "alias":
        row = after or before
        if before is None:
            return f"Added alias “{row.surface}” to {names.entry(row.entry_id)}"
        if after is None:
            return f"Removed alias “{row.surface}” from {names.entry(row.entry_id)}"
        if before.entry_id != after.entry_id:
            return (
                f"Moved alias “{after.surface}” from {names.entry(before.entry_id)} to "
                f"{names.entry(after.entry_id)}"
            )
        return f"Changed alias “{after.surface}” of {names.entry(after.entry_id)}"
    # entry
    row = after or before
    if before is None:
        return f"Created {names.entry(row.id)}"
    if after is None:
        return f"Removed {names.entry(row.id)} from the record"
    parts = []
    if before.status != after.status:
        status = f"status {before.status} → {after.status}"
        if after.merged_into_id:
            status += f" (into {names.entry(after.merged_into_id)})"
        if after.status == "retired" and after.retired_reason:
            status += f": {after.retired_reason}"
        parts.append(status)
    if before.title != after.title:
        parts.append(f"title “{before.title}” → “{after.title}”")
    edited = sorted(
        {
            word
            for f, word in ENTRY_WORDS.items()
            if f != "title" and getattr(before, f, None) != getattr(after, f, None)
        }
    )
    if edited:
        parts.append("edited " + ", ".join(edited))
    return f"{names.entry(row.id)}: " + ("; ".join(parts) if parts else "saved, nothing changed")


def _history_rows(entry: Entry) -> tuple[list, list, list]:
    pk = entry.pk
    return (
        list(Entry.history.filter(id=pk).order_by("history_id")),
        list(Edge.history.filter(Q(from_entry_id=pk) | Q(to_entry_id=pk)).order_by("history_id")),
        list(Alias.history.filter(Q(entry_id=pk)).order_by("history_id")),
    )


def _priors(model, rows) -> dict[int, object]:
    """The version before each row (by history_id), in one statement per model."""
    ids = {r.id for r in rows}
    by_object: dict[int, list] = {}
    for row in model.history.filter(id__in=ids).order_by("id", "history_id"):
        by_object.setdefault(row.id, []).append(row)
    prior = {}
    for versions in by_object.values():
        for before, after in zip([None, *versions], versions, strict=False):
            prior[after.history_id] = before
    return prior


def entry_timeline(entry: Entry, *, limit: int = 100) -> list[TimelineOperation]:
    """The newest ``limit`` operations that touched ``entry``, newest first."""
    entries, edges, aliases = _history_rows(entry)
    op_ids = {r.operation_id for r in (*entries, *edges, *aliases) if r.operation_id}
    operations = Operation.objects.in_bulk(op_ids)
    whole = [pk for pk, op in operations.items() if op.kind in WHOLE_OPERATIONS]
    rows = {"entry": entries, "edge": edges, "alias": aliases}
    if whole:  # the other rows of merges, splits, deletes and reverts that touched the entry
        for name, model in (("entry", Entry), ("edge", Edge), ("alias", Alias)):
            seen = {r.history_id for r in rows[name]}
            extra = model.history.filter(operation_id__in=whole).order_by("history_id")
            rows[name] = sorted(
                [*rows[name], *(r for r in extra[:2000] if r.history_id not in seen)],
                key=lambda r: r.history_id,
            )
    models = {"entry": Entry, "edge": Edge, "alias": Alias}
    priors = {name: _priors(models[name], rows[name]) for name in rows}
    names = _names_of(rows, priors, {entry.pk})

    groups: dict[object, TimelineOperation] = {}
    for name, items in rows.items():
        for r in items:
            key = r.operation_id or ("row", r.history_date)
            group = groups.get(key)
            if group is None:
                op = operations.get(r.operation_id)
                group = groups[key] = TimelineOperation(
                    op,
                    op.created_at if op else r.history_date,
                    (op.actor if op else r.history_actor) or "unknown",
                    (op.reason if op else r.history_change_reason) or "",
                    op.kind if op else CHANGE[r.history_type],
                )
            if len(group.changes) >= ROWS_PER_OPERATION:
                group.more += 1
                continue
            before = priors[name].get(r.history_id)
            after = None if r.history_type == "-" else r
            if before is not None and before.history_type == "-":
                before = None
            group.changes.append(
                Change(name, r.id, CHANGE[r.history_type], describe(name, before, after, names))
            )
    ordered = sorted(groups.values(), key=lambda g: g.when, reverse=True)
    return ordered[:limit]


def describe_revert(plans: list[tuple]) -> list[str]:
    """What reverting does, in words: each row of ``revert_plan`` goes from its state after
    the operation (``last``) back to the state before it (``prior``; None: it is removed)."""
    entry_ids: set[int] = set()
    type_ids: set[int] = set()
    for model, _, prior, last in plans:
        for row in (prior, last):
            if row is None:
                continue
            if model is Entry:
                entry_ids.add(row.id)
                if row.merged_into_id:
                    entry_ids.add(row.merged_into_id)
            elif model is Edge:
                entry_ids |= {row.from_entry_id, row.to_entry_id}
                type_ids.add(row.type_id)
            else:
                entry_ids.add(row.entry_id)
    names = Names(entry_ids, type_ids)
    words = {Entry: "entry", Edge: "edge", Alias: "alias"}
    out = []
    for model, _, prior, last in plans:
        before = None if last.history_type == "-" else last
        after = None if prior is None or prior.history_type == "-" else prior
        out.append(describe(words[model], before, after, names))
    return out


def operation_story(op: Operation, *, limit: int = 500) -> list[str]:
    """What ``op`` did, one sentence per row it wrote (entries, then edges, then aliases)."""
    rows = {
        name: list(model.history.filter(operation_id=op.pk).order_by("history_id")[:limit])
        for name, model in (("entry", Entry), ("edge", Edge), ("alias", Alias))
    }
    models = {"entry": Entry, "edge": Edge, "alias": Alias}
    priors = {name: _priors(models[name], rows[name]) for name in rows}
    names = _names_of(rows, priors, set())
    out = []
    for name, items in rows.items():
        for r in items:
            before = priors[name].get(r.history_id)
            if before is not None and before.history_type == "-":
                before = None
            out.append(describe(name, before, None if r.history_type == "-" else r, names))
    return out
