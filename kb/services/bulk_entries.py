"""The ``kind`` and ``entry`` line types of the JSON Lines import (API.md "Bulk data").

Entries are written set-wise: the bank's entries are read once as plain values (no model
instances), new entries go in by ``COPY`` with their history rows, and the entries a file
changes are updated in one ``UPDATE … FROM`` a temporary table (:func:`update_rows`) with one
history row each, stamped with the import operation. A re-import that changes nothing writes
nothing.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Q
from django.utils import timezone

from kb import audit
from kb.errors import InvalidInput
from kb.history_rows import copy_dicts, reserve_ids, update_rows
from kb.models import Bank, Entry, EntryKind, EntryStatus
from kb.services.bulk import (
    ApplyState,
    ImportContext,
    PlannedLine,
    Progress,
    entry_deleted_error,
    register_line_type,
    upsert_vocabulary,
)
from kb.services.entries import CREATE_FIELDS, clean_entry_data, kinds_for_bank

SHORT_ID = re.compile(r"^[0-9a-f]{8}$")
IMPORTABLE_STATUSES = {
    EntryStatus.LIVE,
    EntryStatus.RETIRED,
    EntryStatus.CANCELLED,
    EntryStatus.DONE,
}
ENTRY_COMPARED_FIELDS = (
    "key",
    "title",
    "content",
    "summary",
    "useful_for",
    "systems",
    "tasks",
    "metadata",
    "kind_id",
    "status",
    "steps",
    "anchor_files",
    "anchor_symbols",
    "durable",
    "expires_at",
    "resolved_by_id",
)
PRESENT_COLUMNS = ("id", "status_changed_at", *ENTRY_COMPARED_FIELDS)


@dataclass(slots=True)
class Known:
    """An entry of the bank as validation sees it (no model instance: read as values)."""

    pk: int
    short_id: str
    key: str | None
    title: str
    summary: str
    content: str
    useful_for: str
    status: str
    merged_into_id: int | None


def known_entries(bank: Bank) -> list[Known]:
    """Every entry of the bank, deleted and merged ones included, as :class:`Known` (one
    read): validation tells a deleted or merged-away id from an unknown one."""
    rows = Entry.objects.filter(bank=bank).values_list(
        "pk",
        "short_id",
        "key",
        "title",
        "summary",
        "content",
        "useful_for",
        "status",
        "merged_into_id",
    )
    return [Known(*row) for row in rows.iterator(chunk_size=20_000)]


class KindLines:
    order = 0

    def validate(self, ctx: ImportContext, line: int, obj: dict) -> dict:
        allowed = {"type", "name", "weight", "container", "structural", "entity", "description"}
        unknown = sorted(set(obj) - allowed)
        name = obj.get("name")
        if unknown:
            raise InvalidInput(f"Unknown fields on a kind line: {', '.join(unknown)}.")
        if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9_-]{1,64}", name):
            raise InvalidInput("A kind needs a name of lowercase letters, digits, '_' or '-'.")
        weight = obj.get("weight", 1)
        if not isinstance(weight, int | float) or isinstance(weight, bool):
            raise InvalidInput("A kind's weight must be a number.")
        data = {
            "name": name,
            "weight": float(weight),
            "container": bool(obj.get("container", False)),
            "structural": bool(obj.get("structural", False)),
            "entity": bool(obj.get("entity", False)),
            "description": str(obj.get("description", ""))[:300],
        }
        if name in ctx.kinds and ctx.kinds[name].bank_id is None:
            return {"core": True, **data}  # core kinds are not redefined per bank
        if name not in ctx.kinds:
            ctx.kinds[name] = EntryKind(bank=ctx.bank, **data)  # unsaved placeholder for validation
        return data

    def present(self, ctx: ImportContext, obj: dict) -> bool:
        return obj.get("name") in ctx.kinds

    def apply(self, state: ApplyState, items: list[PlannedLine], progress: Progress | None) -> None:
        upsert_vocabulary(state, EntryKind, items, "kinds")

    def export(self, bank: Bank) -> Iterable[dict]:
        for kind in EntryKind.objects.filter(bank=bank).order_by("name"):
            yield {
                "type": "kind",
                "name": kind.name,
                "weight": kind.weight,
                "container": kind.container,
                "structural": kind.structural,
                "entity": kind.entity,
                "description": kind.description,
            }


ENTRY_ALLOWED = tuple(f for f in CREATE_FIELDS if f != "connections")


class EntryLines:
    order = 1

    def present(self, ctx: ImportContext, obj: dict) -> bool:
        """Its id or key was ever an entry of the bank (deleted and merged ones count)."""
        return ctx.names_bank_entry(obj.get("id")) or ctx.names_bank_entry(obj.get("key"))

    def validate(self, ctx: ImportContext, line: int, obj: dict) -> dict:
        body = {k: v for k, v in obj.items() if k not in ("type", "id", "status")}
        resolved_ref = None
        lifetime = body.get("lifetime")
        if isinstance(lifetime, dict) and set(lifetime) == {"resolved_by"}:
            # May point at an entry defined later in the file: check it here, bind it on apply.
            named = lifetime["resolved_by"]
            resolved_ref = ctx.refs().get(named) if isinstance(named, str) else None
            if resolved_ref is None:
                raise ctx.unknown_ref(named, "lifetime.resolved_by")
            body["lifetime"] = {"durable": True}
        data = clean_entry_data(
            ctx.bank, body, allowed=ENTRY_ALLOWED, kinds=ctx.kinds, lifetime_required=False
        )
        short_id = obj.get("id")
        if short_id is not None and (not isinstance(short_id, str) or not SHORT_ID.match(short_id)):
            raise InvalidInput("id must be 8 lowercase hexadecimal characters.")
        status = obj.get("status", EntryStatus.LIVE)
        if status not in IMPORTABLE_STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(sorted(IMPORTABLE_STATUSES))}.")
        key = data.get("key")
        by_id = _named(ctx, short_id)
        by_key = _named(ctx, key)
        if by_id and by_key and by_id.pk != by_key.pk:
            raise InvalidInput(
                f"id {short_id!r} and key {key!r} name two different existing entries."
            )
        existing = by_id or by_key
        if existing is not None and existing.status == EntryStatus.DELETED:
            if not ctx.restore_deleted:
                raise entry_deleted_error(existing, "This entry line")
            data["restore"] = True
        if existing is not None and existing.status == EntryStatus.MERGED:
            survivor = ctx.survivor(existing)
            raise InvalidInput(
                f"Entry {existing.short_id} was merged into {survivor.short_id}; its id and "
                f"key now name {survivor.short_id}. Write this line for {survivor.short_id} "
                "(its own id) or drop it.",
                code="entry_merged",
            )
        data["status"] = status
        data["short_id"] = short_id
        data["resolved_ref"] = resolved_ref
        data["existing"] = existing
        if "lifetime" not in obj:
            data.update({"durable": True, "expires_at": None, "resolved_by": None})
        return data

    def apply(self, state: ApplyState, items: list[PlannedLine], progress: Progress | None) -> None:
        """New entries by COPY (ids reserved first, so a ``lifetime.resolved_by`` naming an
        entry of the file binds in the same row), changed ones in one set-wise UPDATE."""
        now = timezone.now()
        actor = audit.current().actor
        kinds = kinds_for_bank(state.bank)  # after the kind phase: declared kinds now have ids
        present, taken = _present_entries(state.bank, items)
        new_ids = iter(reserve_ids(Entry, sum(1 for i in items if i.data["existing"] is None)))
        planned: list[tuple[dict, dict | None, str | None]] = []  # values, present, resolved
        created: list[dict] = []
        for item in items:
            values = _line_values(item.data, kinds)
            if item.data["existing"] is None:
                _plan_new(state, item, values, next(new_ids), taken, actor, now)
                created.append(values)
                planned.append((values, None, item.data["resolved_ref"]))
            else:
                current = _plan_existing(state, item, values, present)
                planned.append((values, current, item.data["resolved_ref"]))
        changed = _changed_rows(state, planned, now)
        _write_entries(state, created, changed, present, now, progress)
        if progress:
            progress("writing", len(items), len(items))

    def export(self, bank: Bank) -> Iterable[dict]:
        entries = (
            Entry.objects.filter(bank=bank, status__in=IMPORTABLE_STATUSES)
            .select_related("kind", "resolved_by")
            .order_by("created_at", "id")
        )
        for e in entries.iterator(chunk_size=2000):
            yield entry_line(e)


def _present_entries(bank: Bank, items: list[PlannedLine]) -> tuple[dict[int, tuple], set[str]]:
    """The bank's entries as they are now, in the transaction (what the file compares with;
    deleted ones only when a line restores them), and every short_id the bank has ever used
    (deleted entries keep theirs): two reads."""
    restoring = {i.data["existing"].pk for i in items if i.data.get("restore")}
    present = {
        row[0]: row
        for row in Entry.objects.filter(bank=bank)
        .exclude(Q(status=EntryStatus.DELETED) & ~Q(pk__in=restoring))
        .values_list("pk", *PRESENT_COLUMNS[1:])
        .iterator(chunk_size=20_000)
    }
    taken = set(Entry.objects.filter(bank=bank).values_list("short_id", flat=True))
    return present, taken


_NOT_COLUMNS = ("existing", "short_id", "resolved_ref", "resolved_by", "kind", "restore")


def _line_values(data: dict, kinds: dict) -> dict:
    """A validated entry line's column values (``kind_id``, ``resolved_by_id`` resolved)."""
    values = {k: v for k, v in data.items() if k not in _NOT_COLUMNS}
    values["kind_id"] = kinds[data["kind"].name].pk
    if data.get("resolved_by") is not None:
        values["resolved_by_id"] = data["resolved_by"].pk
    elif "resolved_by" in data:
        values["resolved_by_id"] = None
    return values


def _plan_new(
    state: ApplyState,
    item: PlannedLine,
    values: dict,
    pk: int,
    taken: set[str],
    actor: str,
    now: dt.datetime,
) -> None:
    """Complete a new entry's row (its reserved id, a fresh short_id unless the line gives
    one, the clocks) and make its names resolve for the later line types."""
    short_id = item.data["short_id"] or _fresh_short_id(taken)
    taken.add(short_id)
    values.update(
        id=pk,
        bank_id=state.bank.pk,
        short_id=short_id,
        created_by=actor,
        created_at=now,
        updated_at=now,
        status_changed_at=now,
    )
    state.by_ref[short_id] = pk
    if values.get("key"):
        state.by_ref[values["key"]] = pk


def _plan_existing(
    state: ApplyState, item: PlannedLine, values: dict, present: dict[int, tuple]
) -> dict:
    """The present row of the entry a line upserts (refused when it was deleted or merged
    since validation); its names resolve to it for the later line types."""
    data, existing = item.data, item.data["existing"]
    row = present.get(existing.pk)
    if row is None or (row[PRESENT_COLUMNS.index("status")] == EntryStatus.MERGED):
        raise InvalidInput(  # deleted or merged since validation
            f"line {item.line}: entry {existing.short_id} was deleted or merged "
            "meanwhile; import again.",
            code="entry_deleted" if row is None else "entry_merged",
        )
    current = dict(zip(PRESENT_COLUMNS, row, strict=True))
    if data.get("restore"):  # its names work again for the later line types
        state.by_ref[existing.short_id] = existing.pk
        if current["key"]:
            state.by_ref[current["key"]] = existing.pk
    # A line upserting by key may carry another id (or a new key): later lines naming the
    # entry by the line's names mean this entry.
    for name in (data["short_id"], values.get("key")):
        if name:
            state.by_ref.setdefault(name, existing.pk)
    return current


def _changed_rows(
    state: ApplyState, planned: list[tuple[dict, dict | None, str | None]], now: dt.datetime
) -> dict[int, dict]:
    """Bind each ``lifetime.resolved_by`` (every entry of the file has an id now) and keep the
    existing entries whose compared fields differ, as full rows by id (two lines naming one
    entry: the last wins); counts the unchanged ones."""
    changed: dict[int, dict] = {}
    for values, current, resolved_ref in planned:
        if resolved_ref is not None:
            values.update(durable=False, expires_at=None, resolved_by_id=state.by_ref[resolved_ref])
        if current is None:
            continue
        differs = [k for k in ENTRY_COMPARED_FIELDS if k in values and current[k] != values[k]]
        if not differs:
            state.counts["unchanged"] += 1
            continue
        row = {**current, **{k: values[k] for k in ENTRY_COMPARED_FIELDS if k in values}}
        if "status" in differs:
            row["status_changed_at"] = now
        row["updated_at"] = now
        changed[row["id"]] = row
    return changed


def _write_entries(
    state: ApplyState,
    created: list[dict],
    changed: dict[int, dict],
    present: dict[int, tuple],
    now: dt.datetime,
    progress: Progress | None,
) -> None:
    """New entries by ``COPY`` with their history rows; changed ones by one ``UPDATE … FROM``
    with theirs (``kb.history_rows``); the counts of the import."""
    restored = sum(1 for row in changed.values() if present_status(present, row) == "deleted")
    if created:
        copy_dicts(
            Entry,
            created,
            ids=[v["id"] for v in created],
            progress=progress,
            phase="writing entries",
            when=now,
        )
        state.counts["created"] += len(created)
        state.changed_entry_ids.update(v["id"] for v in created)
    if changed:
        columns = [*ENTRY_COMPARED_FIELDS, "status_changed_at", "updated_at"]
        update_rows(Entry, list(changed.values()), columns, when=now)
        state.counts["updated"] += len(changed) - restored
        if restored:
            state.counts["restored"] = state.counts.get("restored", 0) + restored
        state.changed_entry_ids.update(changed)


def present_status(present: dict, row: dict) -> str:
    """The status an entry had before this import wrote ``row`` for it."""
    return present[row["id"]][PRESENT_COLUMNS.index("status")]


def _named(ctx: ImportContext, ref: str | None):
    """The bank's entry (deleted ones included) whose short_id or key is ``ref``."""
    if not ref:
        return None
    return (
        ctx.existing_by_id.get(ref)
        or ctx.existing_by_key.get(ref)
        or ctx.deleted_by_id.get(ref)
        or ctx.deleted_by_key.get(ref)
    )


def _fresh_short_id(taken: set[str]) -> str:
    from kb.models import new_short_id

    while True:
        candidate = new_short_id()
        if candidate not in taken:
            return candidate


def entry_line(e: Entry) -> dict:
    line = {
        "type": "entry",
        "id": e.short_id,
        "key": e.key,
        "title": e.title,
        "content": e.content,
        "summary": e.summary,
        "useful_for": e.useful_for,
        "kind": e.kind.name,
        "systems": e.systems,
        "tasks": e.tasks,
        "metadata": e.metadata,
        "lifetime": e.lifetime,
        "anchors": {"files": e.anchor_files, "symbols": e.anchor_symbols},
        "steps": e.steps,
        "status": e.status,
    }
    if line["key"] is None:
        del line["key"]
    return line


register_line_type("kind", KindLines())
register_line_type("entry", EntryLines())
