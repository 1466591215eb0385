"""Writing entries: validation, create, edit, verify. Every write is one audited operation."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from kb import audit
from kb.entry_limits import EntryLimits, item_too_long_message, limits_for, too_long_message
from kb.errors import InvalidInput, NotFound
from kb.models import Bank, Entry, EntryKind, EntryStatus, OperationKind
from kb.services.duplicates import UNREAD, Neighbour, refuse_duplicate, same_text_match
from kb.unit_of_work import unit_of_work

EDITABLE_FIELDS = (
    "title",
    "content",
    "summary",
    "useful_for",
    "kind",
    "systems",
    "tasks",
    "metadata",
    "lifetime",
    "anchors",
    "steps",
    "key",
)
CREATE_FIELDS = (*EDITABLE_FIELDS, "connections")
IMPORT_ONLY_FIELDS = ("id", "status", "type")


def kinds_for_bank(bank: Bank) -> dict[str, EntryKind]:
    """The bank's kind vocabulary: the core kinds plus the bank's own (which win on a clash)."""
    rows = list(EntryKind.objects.filter(Q(bank__isnull=True) | Q(bank=bank)))
    kinds = {k.name: k for k in rows if k.bank_id is None}
    kinds.update({k.name: k for k in rows if k.bank_id is not None})
    return kinds


def find_entry(bank: Bank, ref: str, *, follow_merges: bool = True) -> Entry:
    """An entry of ``bank`` by short_id or key; a merged id answers its survivor."""
    ref = (ref or "").strip()
    entry = (
        Entry.objects.filter(bank=bank, short_id=ref).select_related("kind", "resolved_by").first()
        or Entry.objects.filter(bank=bank, key=ref).select_related("kind", "resolved_by").first()
    )
    if entry is None or entry.status == EntryStatus.DELETED:
        raise NotFound(f"No entry {ref!r} in bank {bank.slug!r}.", code="entry_not_found")
    if follow_merges:
        seen = {entry.pk}
        while entry.merged_into_id is not None and entry.merged_into_id not in seen:
            seen.add(entry.merged_into_id)
            entry = Entry.objects.select_related("kind", "resolved_by").get(pk=entry.merged_into_id)
    return entry


class _Problems:
    """Field errors collected while cleaning; the ones over a size limit are kept apart, so
    a payload whose only problem is size answers ``too_long``."""

    def __init__(self) -> None:
        self.errors: dict[str, str] = {}
        self.too_long: set[str] = set()

    def __setitem__(self, field: str, message: str) -> None:
        self.errors.setdefault(field, message)

    def __contains__(self, field: str) -> bool:
        return field in self.errors

    def __bool__(self) -> bool:
        return bool(self.errors)

    def long(self, field: str, message: str) -> None:
        if field not in self.errors:
            self.errors[field] = message
            self.too_long.add(field)

    def raise_if_any(self) -> None:
        if not self.errors:
            return
        if set(self.errors) == self.too_long:
            raise InvalidInput(
                "Too long: " + " ".join(self.errors[f] for f in sorted(self.errors)),
                code="too_long",
                fields=dict(self.errors),
            )
        raise InvalidInput(
            "The entry has invalid fields: " + ", ".join(sorted(self.errors)) + ".",
            code="invalid_entry",
            fields=dict(self.errors),
        )


def _string_list(
    value: Any, field: str, errors: _Problems, limits: EntryLimits, report_as: str | None = None
) -> list[str]:
    """A list of non-blank strings within the field's item count and item length."""
    report_as = report_as or field
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors[report_as] = "Must be a list of strings."
        return []
    cleaned = [v.strip() for v in value if v.strip()]
    if len(cleaned) > limits.limit(field):
        errors.long(
            report_as, too_long_message(field, limits.limit(field), len(cleaned), items=True)
        )
    for index, item in enumerate(cleaned):
        if len(item) > limits.item_chars(field):
            message = item_too_long_message(field, limits.item_chars(field), index, len(item))
            errors.long(report_as, message)
            break
    return cleaned


def _clean_steps(steps: Any, errors: _Problems, limits: EntryLimits) -> Any:
    if steps is not None and (
        not isinstance(steps, list) or not all(isinstance(s, str | dict) for s in steps)
    ):
        errors["steps"] = "Must be a list of steps (strings or objects), or null."
        return None
    if steps:
        if len(steps) > limits.limit("steps"):
            errors.long(
                "steps", too_long_message("steps", limits.limit("steps"), len(steps), items=True)
            )
        for index, step in enumerate(steps):
            size = len(step if isinstance(step, str) else json.dumps(step, ensure_ascii=False))
            if size > limits.item_chars("steps"):
                errors.long(
                    "steps", item_too_long_message("steps", limits.item_chars("steps"), index, size)
                )
                break
    return steps


def _clean_lifetime(bank: Bank, value: Any, errors: dict) -> dict[str, Any]:
    message = (
        'Must be exactly one of {"durable": true}, {"expires_at": "YYYY-MM-DD"}, '
        '{"resolved_by": "<id>"}.'
    )
    if not isinstance(value, dict) or len(value) != 1:
        errors["lifetime"] = message
        return {}
    ((name, raw),) = value.items()
    if name == "durable":
        if raw is not True:
            errors["lifetime"] = message
            return {}
        return {"durable": True, "expires_at": None, "resolved_by": None}
    if name == "expires_at":
        try:
            day = dt.date.fromisoformat(raw) if isinstance(raw, str) else None
        except ValueError:
            day = None
        if day is None:
            errors["lifetime"] = "expires_at must be a date in the form YYYY-MM-DD."
            return {}
        return {"durable": False, "expires_at": day, "resolved_by": None}
    if name == "resolved_by":
        if not isinstance(raw, str):
            errors["lifetime"] = "resolved_by must be the id of another entry of this bank."
            return {}
        try:
            target = find_entry(bank, raw)
        except NotFound:
            errors["lifetime"] = f"resolved_by names no entry of this bank: {raw!r}."
            return {}
        return {"durable": False, "expires_at": None, "resolved_by": target}
    errors["lifetime"] = message
    return {}


def _clean_texts(data: dict, errors: _Problems, limits: EntryLimits, *, partial: bool) -> dict:
    """The text fields (title, content, summary, useful_for, key): strings within the bank's
    limits, stripped."""
    out: dict[str, Any] = {}
    for name in ("title", "content", "summary", "useful_for"):
        if name in data:
            value = data[name]
            if value is None and name != "title":
                value = ""
            if not isinstance(value, str):
                errors[name] = "Must be a string."
                continue
            value = value.strip()
            if len(value) > limits.limit(name):
                errors.long(name, too_long_message(name, limits.limit(name), len(value)))
                continue
            out[name] = value
    if (not partial or "title" in data) and "title" not in errors and not out.get("title"):
        errors["title"] = "A non-empty title is required."
    if "key" in data:
        key = data["key"]
        if key is not None and (not isinstance(key, str) or not key.strip()):
            errors["key"] = "Must be a non-empty string, or null."
        elif key is not None and len(key.strip()) > limits.limit("key"):
            errors.long("key", too_long_message("key", limits.limit("key"), len(key.strip())))
        else:
            out["key"] = key.strip() if isinstance(key, str) else None
    return out


def clean_entry_data(
    bank: Bank,
    data: Any,
    *,
    partial: bool = False,
    allowed: tuple[str, ...] = CREATE_FIELDS,
    kinds: dict[str, EntryKind] | None = None,
    lifetime_required: bool = True,
) -> dict[str, Any]:
    """Validate an entry payload; return model-ready values or raise ``InvalidInput``.

    Field errors are collected, not raised one at a time, so a caller sees every problem.
    """
    if not isinstance(data, dict):
        raise InvalidInput("The body must be a JSON object.", code="invalid_body")
    errors = _Problems()
    limits = limits_for(bank)
    unknown = sorted(set(data) - set(allowed))
    for name in unknown:
        errors[name] = "Unknown field."
    out: dict[str, Any] = {}

    out.update(_clean_texts(data, errors, limits, partial=partial))

    if "kind" in data or not partial:
        kinds = kinds if kinds is not None else kinds_for_bank(bank)
        name = data.get("kind", "fact")
        if not isinstance(name, str) or name not in kinds:
            errors["kind"] = f"Unknown kind {name!r}; known kinds: {', '.join(sorted(kinds))}."
        else:
            out["kind"] = kinds[name]

    for name in ("systems", "tasks"):
        if name in data:
            out[name] = _string_list(data[name], name, errors, limits)

    if "metadata" in data:
        if data["metadata"] is None:
            out["metadata"] = {}
        elif not isinstance(data["metadata"], dict):
            errors["metadata"] = "Must be a JSON object."
        else:
            out["metadata"] = data["metadata"]

    if "anchors" in data:
        anchors = data["anchors"]
        if anchors is None:
            anchors = {}
        if not isinstance(anchors, dict) or set(anchors) - {"files", "symbols"}:
            errors["anchors"] = 'Must be {"files": [...], "symbols": [...]}.'
        else:
            out["anchor_files"] = _string_list(
                anchors.get("files"), "anchor_files", errors, limits, "anchors"
            )
            out["anchor_symbols"] = _string_list(
                anchors.get("symbols"), "anchor_symbols", errors, limits, "anchors"
            )

    if "steps" in data:
        out["steps"] = _clean_steps(data["steps"], errors, limits)

    if "lifetime" in data:
        out.update(_clean_lifetime(bank, data["lifetime"], errors))
    elif not partial and lifetime_required:
        errors["lifetime"] = (
            'Required: exactly one of {"durable": true}, {"expires_at": "YYYY-MM-DD"}, '
            '{"resolved_by": "<id>"}.'
        )

    if "connections" in data and data["connections"] not in (None, []):
        if not isinstance(data["connections"], list):
            errors["connections"] = "Must be a list of connections."
        else:
            out["connections"] = data["connections"]

    errors.raise_if_any()
    return out


def _check_key_free(bank: Bank, key: str | None, exclude_pk: int | None = None) -> None:
    from kb.errors import Conflict

    holder = (
        Entry.objects.filter(bank=bank, key=key).exclude(pk=exclude_pk).first() if key else None
    )
    if holder is not None:
        gone = (
            f" (entry {holder.short_id}, deleted: revert its delete, or import it with "
            "restore_deleted, to use it again)"
            if holder.status == "deleted"
            else ""
        )
        raise Conflict(
            f"Another entry of this bank already has key {key!r}{gone}.",
            code="duplicate_key",
            fields={"key": "Another entry of this bank has this key."},
        )


def schedule_embedding(entry_ids: list[int]) -> None:
    """Embed after commit: the entry is searchable lexically until its vectors exist."""
    from kb.tasks import embed_entries_task

    if entry_ids:
        transaction.on_commit(lambda: embed_entries_task.delay(list(entry_ids)))


def check_entry_values(bank: Bank, values: dict[str, Any], entry_pk: int | None = None) -> None:
    """The checks on cleaned values that need the database: the key is free in the bank and
    an entry is not resolved by itself. ``create_entry`` and ``update_entry`` run them inside
    their operation; a form may run them first to show the error on its field."""
    _check_key_free(bank, values.get("key"), exclude_pk=entry_pk)
    resolver = values.get("resolved_by")
    if resolver is not None and entry_pk is not None and resolver.pk == entry_pk:
        raise InvalidInput(
            "An entry cannot be resolved by itself.",
            code="invalid_entry",
            fields={"lifetime": "resolved_by names this entry."},
        )


def create_entry(
    bank: Bank,
    data: dict[str, Any],
    *,
    actor: str | None = None,
    reason: str = "",
    allow_duplicate: bool = False,
    linker: Callable[[Bank, Entry, list], Any] | None = None,
    nearest: list[Neighbour] | None = None,
    vet: Callable[[], list[Neighbour]] | None = None,
) -> Entry:
    """Create an entry from a validated payload (see :func:`clean_entry_data`).

    A near-exact duplicate of an entry of the bank is refused (409 ``duplicate_entry``, see
    :mod:`kb.services.duplicates`) unless ``allow_duplicate``; ``nearest`` are the entries
    nearest to its content text when the caller read them already (the write feedback reads
    the same rows). ``connections`` are written by
    ``linker`` (``(bank, entry, connections)``, inside this operation): the graph app's create
    action passes its own, kb has none.

    ``vet``: the checks that need the write's vectors (it may refuse, and answers the nearest
    entries), run once the entry and its connections are written and before anything is kept,
    so a forward pass in the background overlaps that work; the same-text arm of the duplicate
    check is read before the entry is written. A check before ``vet`` that refuses answers
    before it (the caller decides which refusal a write answers, see the graph's create)."""
    values = dict(data)
    connections = values.pop("connections", None)
    if connections and linker is None:
        raise InvalidInput(
            "connections are not supported yet; create the entry and link it later.",
            code="not_supported_yet",
            fields={"connections": "Not supported yet."},
        )
    short_id = unique_short_id(bank)
    with unit_of_work(bank, OperationKind.CREATE, reason=reason, actor=actor, entry=short_id) as op:
        check_entry_values(bank, values)
        same = UNREAD
        if not allow_duplicate:
            if vet is None:
                refuse_duplicate(bank, values, nearest)
            else:
                same = same_text_match(bank, values)
        entry = Entry(bank=bank, created_by=op.actor, short_id=short_id, **values)
        entry.save()
        if op.details.get("entry") != short_id:  # a joined operation: add it to its details
            audit.record(op, entry=short_id)
        if connections:
            # The entry and its edges land together: any bad connection rolls back the entry.
            linker(bank, entry, connections)
        if vet is not None:
            nearest = vet()
            if not allow_duplicate:
                refuse_duplicate(bank, values, nearest, same=same)
        _embed_new_entry(entry)
    return entry


def write_texts(data: dict[str, Any]) -> list[list[str]]:
    """Every text a learning's write needs a vector of, in the stages the view embeds them
    (``one_forward_pass``, one model call each, in the order the write reads them): the
    entry's content text first (the duplicate check's nearest entries wait for it, and the
    write feedback reads the same rows), then what the guard's classifier judges, then the
    entry's other two search dimensions (its vectors' ``INSERT``, just before the commit)."""
    from kb.services.embedding import dimension_texts
    from kb.services.guard import embedded_text

    probe = Entry(
        title=data.get("title") or "",
        summary=data.get("summary") or "",
        content=data.get("content") or "",
        useful_for=data.get("useful_for") or "",
        systems=data.get("systems") or [],
        tasks=data.get("tasks") or [],
    )
    texts = dimension_texts(probe)
    return [[texts["content"]], [embedded_text(data)], [texts["useful_for"], texts["context"]]]


def _embed_new_entry(entry: Entry) -> None:
    """Store the new entry's vectors now when the write's forward pass already has them (no
    model call, one statement, in the write's transaction); otherwise after commit."""
    from kb.services.embedding import dimension_texts, embed_entries, get_embedder, in_forward_pass

    embedder = get_embedder()
    if in_forward_pass(embedder.name, dimension_texts(entry).values()):
        embed_entries([entry], embedder=embedder, force=True)  # new: no vectors to compare
    else:
        schedule_embedding([entry.pk])


def unique_short_id(bank: Bank, taken: set[str] | None = None) -> str:
    from kb.models import new_short_id

    while True:
        candidate = new_short_id()
        if taken is not None and candidate in taken:
            continue
        if not Entry.objects.filter(bank=bank, short_id=candidate).exists():
            return candidate


def update_entry(
    bank: Bank,
    entry: Entry,
    changes: dict[str, Any],
    *,
    actor: str | None = None,
    reason: str = "",
) -> Entry:
    """Edit an entry. Moves ``updated_at``, never ``verified_at``."""
    if "connections" in changes:
        raise InvalidInput(
            "connections cannot be edited; use the edges API.",
            code="invalid_entry",
            fields={"connections": "Not editable."},
        )
    with unit_of_work(
        bank,
        OperationKind.UPDATE,
        reason=reason,
        actor=actor,
        entry=entry.short_id,
        fields=sorted(changes),
    ):
        entry = Entry.objects.select_for_update(of=("self",)).get(pk=entry.pk)
        check_entry_values(bank, changes, entry.pk)
        for name, value in changes.items():
            setattr(entry, name, value)
        entry.updated_at = timezone.now()
        entry.save()
        schedule_embedding([entry.pk])
    return entry


def verify_entry(bank: Bank, entry: Entry, *, actor: str | None = None, note: str = "") -> Entry:
    """Confirm the entry still holds: moves ``verified_at`` and nothing else."""
    with unit_of_work(
        bank, OperationKind.VERIFY, reason=note, actor=actor, entry=entry.short_id
    ) as op:
        entry = Entry.objects.select_for_update(of=("self",)).get(pk=entry.pk)
        entry.verified_at = timezone.now()
        entry.verified_by = op.actor
        entry.save(update_fields=["verified_at", "verified_by"])
    return entry
