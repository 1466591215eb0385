"""Bulk data in JSON Lines (API.md "Bulk data"): validate the whole file, then write it all in
one operation or nothing. Re-importing the same file changes nothing.

Line types are pluggable: this module handles ``entry`` and ``kind``; the graph app registers
``relation``, ``edge`` and ``alias`` in its ``AppConfig.ready`` (kb never imports graph).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.db import transaction
from django.utils import timezone

from kb import audit
from kb.errors import InvalidInput, KbError
from kb.history_rows import copy_rows
from kb.inputs import loads_checked
from kb.models import Bank, Entry, EntryKind, EntryStatus, OperationKind
from kb.services.embedding import EMBED_BATCH, schedule_embedding_job
from kb.services.entries import CREATE_FIELDS, clean_entry_data, kinds_for_bank, schedule_embedding

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
Progress = Callable[[str, int, int], None]


class ImportFailed(KbError):
    status = 400
    code = "invalid_import"


@dataclass
class ImportContext:
    """What validation knows: the bank, its vocabulary and every entry reference in play."""

    bank: Bank
    kinds: dict[str, EntryKind]
    existing_by_id: dict[str, Entry]
    existing_by_key: dict[str, Entry]
    file_ids: dict[str, int] = field(default_factory=dict)  # short_id -> line
    file_keys: dict[str, int] = field(default_factory=dict)  # key -> line
    file_entries: dict[str, dict] = field(default_factory=dict)  # id or key -> raw entry line
    new_kinds: dict[str, dict] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # for registered line types

    def entry_exists(self, ref: str) -> bool:
        return (
            ref in self.file_ids
            or ref in self.file_keys
            or ref in self.existing_by_id
            or ref in self.existing_by_key
        )

    def entry_text(self, ref: str) -> dict | None:
        """Title, summary, content and useful_for of an entry named in the file or the bank."""
        raw = self.file_entries.get(ref)
        if raw is not None:
            return {k: raw.get(k) or "" for k in ("title", "summary", "content", "useful_for")}
        entry = self.existing_by_id.get(ref) or self.existing_by_key.get(ref)
        if entry is None:
            return None
        return {
            "title": entry.title,
            "summary": entry.summary,
            "content": entry.content,
            "useful_for": entry.useful_for,
        }

    def canonical_ref(self, ref: str) -> str:
        """One name per entry: its file line's id (else key), or the existing short_id."""
        raw = self.file_entries.get(ref)
        if raw is not None:
            return raw.get("id") or raw.get("key")
        entry = self.existing_by_id.get(ref) or self.existing_by_key.get(ref)
        if entry is None:
            return ref
        for candidate in (entry.short_id, entry.key):
            if candidate and candidate in self.file_entries:
                raw = self.file_entries[candidate]
                return raw.get("id") or raw.get("key")
        return entry.short_id


@dataclass
class PlannedLine:
    line: int
    type: str
    data: dict[str, Any]


@dataclass
class ApplyState:
    """Entries of the bank after the entry phase, by short_id and key, for later line types."""

    bank: Bank
    operation_id: int
    by_ref: dict[str, Entry]
    counts: dict[str, int]
    changed_entry_ids: set[int] = field(default_factory=set)

    def entry(self, ref: str) -> Entry:
        return self.by_ref[ref]


class LineType(Protocol):
    """A pluggable line type: ``validate`` returns the planned data or raises InvalidInput."""

    order: int

    def validate(self, ctx: ImportContext, line: int, obj: dict) -> dict: ...

    def apply(
        self, state: ApplyState, items: list[PlannedLine], progress: Progress | None
    ) -> None: ...

    def export(self, bank: Bank) -> Iterable[dict]: ...


LINE_TYPES: dict[str, LineType] = {}


def register_line_type(name: str, handler: LineType) -> None:
    LINE_TYPES[name] = handler


# --- parsing and validation ---------------------------------------------------------------


def parse_lines(text: str) -> tuple[list[tuple[int, dict]], list[dict]]:
    """JSON objects with their 1-based line numbers, and the errors of unparseable lines."""
    objects, errors = [], []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = loads_checked(raw)
        except json.JSONDecodeError as exc:
            errors.append(
                {"line": number, "message": f"Not valid JSON: {exc.msg} at column {exc.colno}."}
            )
            continue
        except InvalidInput as exc:  # too deep, or a string PostgreSQL cannot store
            errors.append({"line": number, "message": exc.message, "code": exc.code})
            continue
        if not isinstance(obj, dict):
            errors.append({"line": number, "message": "Each line must be a JSON object."})
            continue
        if obj.get("type") not in LINE_TYPES:
            known = ", ".join(sorted(LINE_TYPES))
            errors.append(
                {
                    "line": number,
                    "message": f"Unknown line type {obj.get('type')!r}; known types: {known}.",
                }
            )
            continue
        objects.append((number, obj))
    return objects, errors


def _context(bank: Bank) -> ImportContext:
    existing = list(
        Entry.objects.filter(bank=bank)
        .exclude(status=EntryStatus.DELETED)
        .select_related("kind", "resolved_by")
    )
    return ImportContext(
        bank=bank,
        kinds=kinds_for_bank(bank),
        existing_by_id={e.short_id: e for e in existing},
        existing_by_key={e.key: e for e in existing if e.key},
    )


def validate_import(
    bank: Bank, text: str, progress: Progress | None = None
) -> tuple[list[PlannedLine], list[dict]]:
    """Check every line; return the plan and every error found (line number and reason)."""
    objects, errors = parse_lines(text)
    ctx = _context(bank)
    # Pass 1: declarations and entry identities, so later lines may refer to them in any order.
    for number, obj in objects:
        if obj["type"] == "entry":
            for name, table in (("id", ctx.file_ids), ("key", ctx.file_keys)):
                value = obj.get(name)
                if isinstance(value, str) and value:
                    if value in table:
                        errors.append(
                            {
                                "line": number,
                                "message": f"Duplicate entry {name} {value!r} (first on line {table[value]}).",
                            }
                        )
                    else:
                        table[value] = number
                        ctx.file_entries[value] = obj
    plan: list[PlannedLine] = []
    ordered = sorted(objects, key=lambda item: (LINE_TYPES[item[1]["type"]].order, item[0]))
    total = len(ordered)
    for done, (number, obj) in enumerate(ordered, start=1):
        try:
            data = LINE_TYPES[obj["type"]].validate(ctx, number, obj)
            plan.append(PlannedLine(number, obj["type"], data))
        except InvalidInput as exc:
            detail = "; ".join(f"{k}: {v}" for k, v in exc.fields.items()) if exc.fields else ""
            errors.append(
                {"line": number, "message": exc.message + (f" ({detail})" if detail else "")}
            )
        if progress and (done % 500 == 0 or done == total):
            progress("validating", done, total)
    errors.sort(key=lambda e: e["line"])
    return plan, errors


# --- kinds ----------------------------------------------------------------------------------


def upsert_vocabulary(state: ApplyState, model, items: list[PlannedLine], label: str) -> None:
    """Create or update the bank's own vocabulary rows (kinds, relations) named by ``items``;
    lines naming a core row carry ``core`` and change nothing. Counts ``<label>_created`` and
    ``<label>_updated``."""
    for item in items:
        if item.data.get("core"):
            continue
        data = dict(item.data)
        name = data.pop("name")
        row, created = model.objects.get_or_create(bank=state.bank, name=name, defaults=data)
        if created:
            state.counts[f"{label}_created"] = state.counts.get(f"{label}_created", 0) + 1
        elif any(getattr(row, k) != v for k, v in data.items()):
            for k, v in data.items():
                setattr(row, k, v)
            row.save()
            state.counts[f"{label}_updated"] = state.counts.get(f"{label}_updated", 0) + 1


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


# --- entries --------------------------------------------------------------------------------


class EntryLines:
    order = 1

    def validate(self, ctx: ImportContext, line: int, obj: dict) -> dict:
        body = {k: v for k, v in obj.items() if k not in ("type", "id", "status")}
        resolved_ref = None
        lifetime = body.get("lifetime")
        if isinstance(lifetime, dict) and set(lifetime) == {"resolved_by"}:
            # May point at an entry defined later in the file: check it here, bind it on apply.
            resolved_ref = lifetime["resolved_by"]
            if not isinstance(resolved_ref, str) or not ctx.entry_exists(resolved_ref):
                raise InvalidInput(
                    f"lifetime.resolved_by names no entry of the file or bank: {resolved_ref!r}."
                )
            body["lifetime"] = {"durable": True}
        allowed = tuple(f for f in CREATE_FIELDS if f != "connections")
        data = clean_entry_data(
            ctx.bank, body, allowed=allowed, kinds=ctx.kinds, lifetime_required=False
        )
        short_id = obj.get("id")
        if short_id is not None and (not isinstance(short_id, str) or not SHORT_ID.match(short_id)):
            raise InvalidInput("id must be 8 lowercase hexadecimal characters.")
        status = obj.get("status", EntryStatus.LIVE)
        if status not in IMPORTABLE_STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(sorted(IMPORTABLE_STATUSES))}.")
        key = data.get("key")
        by_id = ctx.existing_by_id.get(short_id) if short_id else None
        by_key = ctx.existing_by_key.get(key) if key else None
        if by_id and by_key and by_id.pk != by_key.pk:
            raise InvalidInput(
                f"id {short_id!r} and key {key!r} name two different existing entries."
            )
        if by_id is None and by_key is None and short_id is None and key is None:
            pass  # a new entry with a generated id
        data["status"] = status
        data["short_id"] = short_id
        data["resolved_ref"] = resolved_ref
        data["existing"] = by_id or by_key
        if "lifetime" not in obj:
            data.update({"durable": True, "expires_at": None, "resolved_by": None})
        return data

    def apply(self, state: ApplyState, items: list[PlannedLine], progress: Progress | None) -> None:
        now = timezone.now()
        kinds = kinds_for_bank(state.bank)  # after the kind phase: declared kinds now have ids
        to_create: list[Entry] = []
        resolved_refs: list[tuple[Entry, str]] = []
        # Every short_id the bank has ever used (deleted entries keep theirs), in one read, so
        # a generated id needs no query of its own.
        taken = set(state.by_ref) | set(
            Entry.objects.filter(bank=state.bank).values_list("short_id", flat=True)
        )
        for done, item in enumerate(items, start=1):
            data = dict(item.data)
            existing: Entry | None = data.pop("existing")
            short_id = data.pop("short_id")
            resolved_ref = data.pop("resolved_ref")
            values = {k: v for k, v in data.items() if k != "resolved_by"}
            if resolved_ref is not None:
                # The lifetime is bound once every entry of the file exists (below).
                values.pop("durable", None)
                values.pop("expires_at", None)
            values["kind_id"] = kinds[values.pop("kind").name].pk
            if existing is None:
                entry = Entry(bank=state.bank, created_by=audit.current().actor, **values)
                entry.short_id = short_id or _fresh_short_id(taken)
                entry.resolved_by = data.get("resolved_by")
                entry.created_at = entry.updated_at = entry.status_changed_at = now
                taken.add(entry.short_id)
                to_create.append(entry)
            else:
                entry = existing
                if resolved_ref is None:
                    values["resolved_by_id"] = (
                        data["resolved_by"].pk if data.get("resolved_by") else None
                    )
                changed = {
                    k: v
                    for k, v in values.items()
                    if k in ENTRY_COMPARED_FIELDS and getattr(entry, k) != v
                }
                if resolved_ref is not None:
                    changed.pop("resolved_by_id", None)
                if changed:
                    if "status" in changed:
                        entry.status_changed_at = now
                    for k, v in changed.items():
                        setattr(entry, k, v)
                    entry.updated_at = now
                    entry.save()
                    state.counts["updated"] += 1
                    state.changed_entry_ids.add(entry.pk)
                else:
                    state.counts["unchanged"] += 1
            state.by_ref[entry.short_id] = entry
            if entry.key:
                state.by_ref[entry.key] = entry
            if resolved_ref is not None:
                resolved_refs.append((entry, resolved_ref))
            if progress and done % 500 == 0:
                progress("writing", done, len(items))
        if to_create:
            copy_rows(Entry, to_create, progress=progress, phase="writing entries", when=now)
            state.counts["created"] += len(to_create)
            state.changed_entry_ids.update(e.pk for e in to_create)  # PostgreSQL returns the ids
        created_ids = {e.pk for e in to_create}
        for entry, ref in resolved_refs:
            target = state.by_ref[ref]
            if entry.resolved_by_id != target.pk or entry.durable or entry.expires_at:
                if entry.pk not in created_ids and entry.pk not in state.changed_entry_ids:
                    state.counts["updated"] += 1
                    state.counts["unchanged"] -= 1
                entry.resolved_by = target
                entry.durable = False
                entry.expires_at = None
                entry.save()
                state.changed_entry_ids.add(entry.pk)
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


# --- import / export ------------------------------------------------------------------------


def import_bank(
    bank: Bank,
    text: str,
    *,
    actor: str | None = None,
    reason: str = "import",
    progress: Progress | None = None,
    embed: bool = True,
) -> dict:
    """Validate ``text`` whole, then write it in one operation, set-wise (COPY with history
    rows stamped with the operation). Raises ``ImportFailed`` (with every bad line) and
    writes nothing when any line is bad. Vectors are computed after commit by the embedding
    job, in batches (``embedding_job`` in the result when there are many); until they land
    the new entries are found lexically. ``embed=False`` leaves them to the caller."""
    plan, errors = validate_import(bank, text, progress)
    if errors:
        raise ImportFailed(
            f"The file has {len(errors)} bad line(s); nothing was written.",
            extra={"errors": errors[:1000]},
        )
    counts = {"created": 0, "updated": 0, "unchanged": 0, "kinds_created": 0, "kinds_updated": 0}
    by_type: dict[str, list[PlannedLine]] = {}
    for item in plan:
        by_type.setdefault(item.type, []).append(item)
    with transaction.atomic():
        with audit.operation(
            bank, OperationKind.IMPORT, reason=reason, actor=actor, lines=len(plan)
        ) as op:
            existing = Entry.objects.filter(bank=bank).exclude(status=EntryStatus.DELETED)
            by_ref: dict[str, Entry] = {}
            for e in existing:
                by_ref[e.short_id] = e
                if e.key:
                    by_ref[e.key] = e
            state = ApplyState(bank, op.pk, by_ref, counts)
            for name, handler in sorted(LINE_TYPES.items(), key=lambda kv: kv[1].order):
                if name in by_type:
                    handler.apply(state, by_type[name], progress)
            changed = sum(v for k, v in counts.items() if not k.endswith("unchanged"))
            op.details = {**op.details, **counts}
            op.save(update_fields=["details"])
            if changed == 0:
                # Nothing changed: leave no operation behind, so a re-import is a true no-op.
                transaction.set_rollback(True)
                result = {**counts, "operation": None, "lines": len(plan)}
            else:
                result = {**counts, "operation": op.pk, "lines": len(plan)}
                changed_ids = sorted(state.changed_entry_ids)
                if not embed:
                    result["to_embed"] = changed_ids
                elif len(changed_ids) > EMBED_BATCH:
                    job = schedule_embedding_job(bank, changed_ids, op.actor)
                    result["embedding_job"] = job.public_id
                else:
                    schedule_embedding(changed_ids)
    return result


def export_lines(bank: Bank) -> Iterator[str]:
    """The bank as JSON Lines, in the format :func:`import_bank` reads."""
    for _, handler in sorted(LINE_TYPES.items(), key=lambda kv: kv[1].order):
        for obj in handler.export(bank):
            yield json.dumps(obj, ensure_ascii=False, sort_keys=False)
