"""Bulk data in JSON Lines (API.md "Bulk data"): validate the whole file, then write it all in
one operation or nothing. Re-importing the same file changes nothing.

Line types are pluggable: :mod:`kb.services.bulk_entries` handles ``entry`` and ``kind``; the
graph app registers ``relation``, ``edge`` and ``alias`` in its ``AppConfig.ready`` (kb never
imports graph).
"""

from __future__ import annotations

import contextlib
import gc
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.db import connection, transaction

from kb.errors import InvalidInput, KbError
from kb.inputs import loads_checked, max_json_depth
from kb.models import Bank, EntryKind, OperationKind
from kb.services.embedding import EMBED_BATCH, schedule_embedding_job
from kb.services.entries import kinds_for_bank, schedule_embedding
from kb.unit_of_work import unit_of_work

Progress = Callable[[str, int, int], None]


class ImportFailed(KbError):
    status = 400
    code = "invalid_import"


@dataclass
class ImportContext:
    """What validation knows: the bank, its vocabulary and every entry reference in play."""

    bank: Bank
    kinds: dict[str, EntryKind]
    existing_by_id: dict[str, Any]  # bulk_entries.Known: pk, short_id, key and the texts
    existing_by_key: dict[str, Any]
    file_ids: dict[str, int] = field(default_factory=dict)  # short_id -> line
    file_keys: dict[str, int] = field(default_factory=dict)  # key -> line
    file_entries: dict[str, dict] = field(default_factory=dict)  # id or key -> raw entry line
    new_kinds: dict[str, dict] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # for registered line types
    # Deleted entries by short_id and key: a line naming one is refused (``entry_deleted``)
    # unless the import restores deleted entries (an entry line for it then restores it).
    deleted_by_id: dict[str, Any] = field(default_factory=dict)
    deleted_by_key: dict[str, Any] = field(default_factory=dict)
    restore_deleted: bool = False
    by_pk: dict[int, Any] = field(default_factory=dict)  # every entry, deleted or not

    def survivor(self, entry: Any) -> Any:
        """The entry a merged-away entry lives on as (itself when not merged)."""
        seen = {entry.pk}
        while entry.merged_into_id is not None and entry.merged_into_id not in seen:
            seen.add(entry.merged_into_id)
            nxt = self.by_pk.get(entry.merged_into_id)
            if nxt is None:
                break
            entry = nxt
        return entry

    def deleted(self, ref: str) -> Any:
        """The deleted entry ``ref`` names (directly, or through a merge into an entry deleted
        since), unless the file itself defines ``ref``."""
        if ref in self.file_entries:
            return None
        entry = self.deleted_by_id.get(ref) or self.deleted_by_key.get(ref)
        if entry is not None:
            return entry
        entry = self.existing_by_id.get(ref) or self.existing_by_key.get(ref)
        if entry is not None:
            end = self.survivor(entry)
            if end.status == "deleted" and end.short_id not in self.file_entries:
                return end
        return None

    def unknown_ref(self, ref: Any, what: str) -> InvalidInput:
        """The error for a reference that names no usable entry: ``entry_deleted`` (saying
        how to restore it) when it names a deleted one, else ``entry_not_found``."""
        gone = self.deleted(ref) if isinstance(ref, str) else None
        if gone is not None:
            return entry_deleted_error(gone, what)
        return InvalidInput(f"{what} names no entry of the file or bank: {ref!r}.")

    def names_bank_entry(self, ref: Any) -> bool:
        """Whether ``ref`` is the short_id or key of any entry of the bank, deleted or not."""
        return isinstance(ref, str) and any(
            ref in table
            for table in (
                self.existing_by_id,
                self.existing_by_key,
                self.deleted_by_id,
                self.deleted_by_key,
            )
        )

    def bank_pk(self, canonical: str) -> int | None:
        """The bank entry's id for a canonical name (None for an entry of the file)."""
        if canonical in self.file_entries:
            return None
        entry = self.existing_by_id.get(canonical)
        return entry.pk if entry is not None else None

    def entry_exists(self, ref: str) -> bool:
        return ref in self.refs()

    def entry_text(self, ref: str) -> dict | None:
        """Title, summary, content and useful_for of an entry named in the file or the bank."""
        raw = self.file_entries.get(ref)
        if raw is not None:
            return {k: raw.get(k) or "" for k in ("title", "summary", "content", "useful_for")}
        entry = self.existing_by_id.get(ref) or self.existing_by_key.get(ref)
        if entry is None:
            return None
        entry = self.survivor(entry)
        return {
            "title": entry.title,
            "summary": entry.summary,
            "content": entry.content,
            "useful_for": entry.useful_for,
        }

    def canonical_ref(self, ref: str) -> str:
        """One name per entry: its file line's id (else key), or the existing short_id. A
        merged-away entry's names resolve to its survivor; None when that was deleted."""
        raw = self.file_entries.get(ref)
        if raw is not None:
            return raw.get("id") or raw.get("key")
        entry = self.existing_by_id.get(ref) or self.existing_by_key.get(ref)
        if entry is None:
            return ref
        entry = self.survivor(entry)
        if entry.status == "deleted":
            raw = self.file_entries.get(entry.short_id)  # restored by this file
            return (raw.get("id") or raw.get("key")) if raw is not None else None
        for candidate in (entry.short_id, entry.key):
            if candidate and candidate in self.file_entries:
                raw = self.file_entries[candidate]
                return raw.get("id") or raw.get("key")
        return entry.short_id

    def refs(self) -> dict[str, str]:
        """Every name of an entry (file or bank) → :meth:`canonical_ref`, built once: one
        dict lookup per reference for line types with many (edges)."""
        cached = self.extra.get("refs")
        if cached is None:
            names = {*self.existing_by_id, *self.existing_by_key, *self.file_entries}
            cached = self.extra["refs"] = {
                name: canonical
                for name in names
                if (canonical := self.canonical_ref(name)) is not None
            }
        return cached


def entry_deleted_error(entry: Any, what: str = "This line") -> InvalidInput:
    """``entry_deleted``: the line names a deleted entry; says how to bring it back."""
    return InvalidInput(
        f"{what} names entry {entry.short_id}, which was deleted. To restore it, import "
        "this file again with restore_deleted (REST: ?restore_deleted=true or a "
        "'restore_deleted' form field; command: --restore-deleted) with an entry line for "
        "it, or revert the delete operation.",
        code="entry_deleted",
    )


@dataclass
class PlannedLine:
    line: int
    type: str
    data: dict[str, Any]


@dataclass
class ApplyState:
    """Entry ids of the bank after the entry phase, by short_id and key, for later line types;
    ``timings`` collects seconds per write phase (see :func:`import_bank`)."""

    bank: Bank
    operation_id: int
    by_ref: dict[str, int]
    counts: dict[str, int]
    changed_entry_ids: set[int] = field(default_factory=set)
    timings: dict[str, float] = field(default_factory=dict)

    def entry(self, ref: str) -> int:
        """The id of the entry ``ref`` names."""
        return self.by_ref[ref]


class LineType(Protocol):
    """A pluggable line type: ``validate`` returns the planned data or raises InvalidInput."""

    order: int

    def validate(self, ctx: ImportContext, line: int, obj: dict) -> dict: ...

    def apply(
        self, state: ApplyState, items: list[PlannedLine], progress: Progress | None
    ) -> None: ...

    def export(self, bank: Bank) -> Iterable[dict]: ...

    # Optional: ``present(ctx, obj) -> bool``, whether the bank has (or had, until a curator
    # removed it) what the line describes; a missing-only import skips such lines.


LINE_TYPES: dict[str, LineType] = {}


def register_line_type(name: str, handler: LineType) -> None:
    LINE_TYPES[name] = handler


# --- parsing and validation ---------------------------------------------------------------


_SCAN = json.JSONDecoder().scan_once  # the C scanner json.loads ends in, without its wrappers


def _may_be_unstorable(raw: str, limit: int) -> bool:
    """Whether a parsed line needs :func:`check_json`: only a ``\\u`` escape can put a NUL or
    a lone surrogate into a string (a raw control character is not valid JSON, a raw
    surrogate is caught by the caller), and nesting deeper than ``limit`` needs more than
    ``limit`` brackets. False positives only cost the full check."""
    return "\\u" in raw or raw.count("{") + raw.count("[") > limit


def parse_lines(text: str) -> tuple[list[tuple[int, dict]], list[dict]]:
    """JSON objects with their 1-based line numbers, and the errors of unparseable lines.

    Each line is parsed by the C scanner; only a line it refuses, or one that may hold an
    unstorable string or too deep a nesting (see ``_may_be_unstorable``), goes through
    :func:`kb.inputs.loads_checked`, whose messages are the errors reported."""
    objects, errors = [], []
    limit = max_json_depth()
    try:
        text.encode("utf-8")
        full_check = False
    except UnicodeEncodeError:  # a lone surrogate somewhere: check every line fully
        full_check = True
    known = LINE_TYPES
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        obj = None
        if not full_check and not _may_be_unstorable(raw, limit):
            try:
                obj, end = _SCAN(raw, 0)
            except Exception:  # noqa: BLE001 - any refusal: the full path says why
                obj = None
            else:
                if end != len(raw):
                    obj = None
        if obj is None:
            try:
                obj = loads_checked(raw)
            except json.JSONDecodeError as exc:
                errors.append(
                    {
                        "line": number,
                        "message": f"Not valid JSON: {exc.msg} at column {exc.colno}.",
                    }
                )
                continue
            except InvalidInput as exc:  # too deep, or a string PostgreSQL cannot store
                errors.append({"line": number, "message": exc.message, "code": exc.code})
                continue
        if type(obj) is not dict:
            errors.append({"line": number, "message": "Each line must be a JSON object."})
            continue
        if obj.get("type") not in known:
            names = ", ".join(sorted(known))
            errors.append(
                {
                    "line": number,
                    "message": f"Unknown line type {obj.get('type')!r}; known types: {names}.",
                }
            )
            continue
        objects.append((number, obj))
    return objects, errors


def _context(bank: Bank, restore_deleted: bool = False) -> ImportContext:
    from kb.services.bulk_entries import known_entries

    everything = known_entries(bank)
    existing = [e for e in everything if e.status != "deleted"]
    deleted = [e for e in everything if e.status == "deleted"]
    return ImportContext(
        bank=bank,
        kinds=kinds_for_bank(bank),
        existing_by_id={e.short_id: e for e in existing},
        existing_by_key={e.key: e for e in existing if e.key},
        deleted_by_id={e.short_id: e for e in deleted},
        deleted_by_key={e.key: e for e in deleted if e.key},
        restore_deleted=restore_deleted,
        by_pk={e.pk: e for e in everything},
    )


def validate_import(
    bank: Bank,
    text: str,
    progress: Progress | None = None,
    timings: dict[str, float] | None = None,
    *,
    restore_deleted: bool = False,
    missing_only: bool = False,
    skipped: list[int] | None = None,
) -> tuple[list[PlannedLine], list[dict]]:
    """Check every line; return the plan and every error found (line number, reason and, for
    refusals with a code of their own such as ``entry_deleted``, that code). ``timings``
    (when given) receives the seconds of ``parse`` and ``validate``.

    ``missing_only`` plans only what the bank never had: a line whose line type says it is
    ``present`` (the entry's id or key was ever used, the vocabulary row exists, the edge or
    alias exists or existed, or names an entry deleted since) is left out, its number added
    to ``skipped``."""
    started = time.perf_counter()
    objects, errors = parse_lines(text)
    parsed = time.perf_counter()
    ctx = _context(bank, restore_deleted)
    # Pass 1: declarations and entry identities, so later lines may refer to them in any order.
    for number, obj in objects:
        if obj["type"] == "entry":
            if missing_only and (
                ctx.names_bank_entry(obj.get("id")) or ctx.names_bank_entry(obj.get("key"))
            ):
                continue  # the bank's entry stands for it, as curators left it
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
    # By line type order, each in file order (a stable grouping, no sort of every line).
    groups: dict[int, list[tuple[int, dict]]] = {}
    for item in objects:
        groups.setdefault(LINE_TYPES[item[1]["type"]].order, []).append(item)
    total = len(objects)
    done = 0
    for order in sorted(groups):
        for number, obj in groups[order]:
            kind = obj["type"]
            present = getattr(LINE_TYPES[kind], "present", None)
            if missing_only and present is not None and present(ctx, obj):
                if skipped is not None:
                    skipped.append(number)
                done += 1
                continue
            try:
                plan.append(PlannedLine(number, kind, LINE_TYPES[kind].validate(ctx, number, obj)))
            except InvalidInput as exc:
                detail = "; ".join(f"{k}: {v}" for k, v in exc.fields.items()) if exc.fields else ""
                errors.append(
                    {
                        "line": number,
                        "message": exc.message + (f" ({detail})" if detail else ""),
                        "code": exc.code,
                    }
                )
            done += 1
            if progress and (done % 500 == 0 or done == total):
                progress("validating", done, total)
    errors.sort(key=lambda e: e["line"])
    if timings is not None:
        timings["parse"] = parsed - started
        timings["validate"] = time.perf_counter() - parsed
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


# --- import / export ------------------------------------------------------------------------


def import_bank(
    bank: Bank,
    text: str,
    *,
    actor: str | None = None,
    reason: str = "import",
    progress: Progress | None = None,
    embed: bool = True,
    timings: dict[str, float] | None = None,
    restore_deleted: bool = False,
    missing_only: bool = False,
) -> dict:
    """Validate ``text`` whole, then write it in one operation, set-wise (COPY with history
    rows stamped with the operation). Raises ``ImportFailed`` (with every bad line) and
    writes nothing when any line is bad. Vectors are computed after commit by the embedding
    job, in batches (``embedding_job`` in the result when there are many); until they land
    the new entries are found lexically. ``embed=False`` leaves them to the caller.

    ``timings`` (a dict, when given) receives seconds per phase: ``parse``, ``validate``,
    ``write <type> lines`` for each line type written, and ``commit`` (the deferred checks).
    Python's cyclic garbage collector is paused meanwhile (see :func:`gc_paused`).

    A line naming a deleted entry (by id or key, or through an edge, alias or lifetime) is a
    line error ``entry_deleted``; with ``restore_deleted`` an entry line for it restores it
    (its history row is stamped with the import operation, like every other write). Names of
    a merged-away entry resolve to its survivor in references; an entry line for one is a
    line error ``entry_merged``.

    ``missing_only`` adds only what the bank never had (see :func:`validate_import`): what
    curators changed, deleted, merged or unlinked stays as they left it; ``skipped`` counts
    the lines left out. The demo loader runs this way."""
    with gc_paused():
        return _import_bank(
            bank, text, actor, reason, progress, embed, timings, restore_deleted, missing_only
        )


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a bulk job: a file of half a million lines
    holds millions of live containers, and each full collection walks all of them, which made
    parsing five times slower. Nothing here makes cycles worth collecting meanwhile."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _import_bank(
    bank, text, actor, reason, progress, embed, timings, restore_deleted, missing_only
) -> dict:
    timings = timings if timings is not None else {}
    skipped: list[int] = []
    plan, errors = validate_import(
        bank,
        text,
        progress,
        timings,
        restore_deleted=restore_deleted,
        missing_only=missing_only,
        skipped=skipped,
    )
    if errors:
        raise ImportFailed(
            f"The file has {len(errors)} bad line(s); nothing was written.",
            extra={"errors": errors[:1000]},
        )
    counts = {
        "created": 0,
        "updated": 0,
        "unchanged": 0,
        "kinds_created": 0,
        "kinds_updated": 0,
    }
    if missing_only:
        counts["skipped"] = len(skipped)
    by_type: dict[str, list[PlannedLine]] = {}
    for item in plan:
        by_type.setdefault(item.type, []).append(item)
    with transaction.atomic():
        with unit_of_work(
            bank, OperationKind.IMPORT, reason=reason, actor=actor, lines=len(plan)
        ) as op:
            by_ref: dict[str, int] = {}
            for pk, short_id, key in _entry_names(bank):
                by_ref[short_id] = pk
                if key:
                    by_ref[key] = pk
            state = ApplyState(bank, op.pk, by_ref, counts, timings=timings)
            for name, handler in sorted(LINE_TYPES.items(), key=lambda kv: kv[1].order):
                if name in by_type:
                    started = time.perf_counter()
                    timings[f"write {name} lines"] = 0.0  # listed before its parts, if any
                    handler.apply(state, by_type[name], progress)
                    timings[f"write {name} lines"] = time.perf_counter() - started
            changed = sum(v for k, v in counts.items() if not k.endswith(("unchanged", "skipped")))
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
                if changed >= ANALYZE_AFTER_ROWS:
                    transaction.on_commit(refresh_statistics)
        committing = time.perf_counter()
    # Deferred constraint checks (foreign keys of every row written) run at commit.
    timings["commit"] = time.perf_counter() - committing
    return result


# A bulk write this large changes the tables' statistics enough that the planner, until
# autovacuum gets to them, picks plans for an empty bank (measured: the fold's neighbour
# statement at 84 ms instead of 5 ms right after 300k edges were loaded). Refreshed after
# commit, so the import's own transaction does not wait for it.
ANALYZE_AFTER_ROWS = 10_000
ANALYZED_TABLES = ("kb_entry", "graph_edge", "graph_alias")


def refresh_statistics() -> None:
    """ANALYZE the tables an import writes (a sample of each; about a second at 400k edges)."""
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {', '.join(ANALYZED_TABLES)}")


def _entry_names(bank: Bank) -> Iterator[tuple[int, str, str | None]]:
    """(id, short_id, key) of the bank's entries that are not deleted, in one read."""
    from kb.models import Entry, EntryStatus

    rows = Entry.objects.filter(bank=bank).exclude(status=EntryStatus.DELETED)
    return rows.values_list("pk", "short_id", "key").iterator(chunk_size=20_000)


def export_lines(bank: Bank) -> Iterator[str]:
    """The bank as JSON Lines, in the format :func:`import_bank` reads."""
    for _, handler in sorted(LINE_TYPES.items(), key=lambda kv: kv[1].order):
        for obj in handler.export(bank):
            yield json.dumps(obj, ensure_ascii=False, sort_keys=False)


from kb.services import bulk_entries  # noqa: E402, F401  (registers kind and entry lines)
