"""Traversal requests: the validation of traverse bodies and limits shared by the API endpoints."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from graph.edges.clocks import parse_instant
from graph.edges.vocab import relation_ids_for_bank
from graph.resolution.aliases import resolve
from graph.traversal.walk import (
    DEFAULT_DEPTH,
    DIRECTIONS,
    MAX_DEPTH,
    MAX_EVIDENCE_TOKENS,
    MAX_EXPANSIONS,
    MAX_PATHS,
    MAX_RELATIONS_PER_STEP,
    Limits,
    Step,
    TraversalResult,
    _type_ids,
    traverse,
)
from kb.errors import InvalidInput, NotFound
from kb.inputs import check_known
from kb.models import Bank, Entry, EntryStatus
from kb.services.entries import find_entry, kinds_for_bank


@dataclass
class StartResolution:
    entry: Entry
    given: Any
    matched: str


@dataclass
class TraversalRequest:
    """A validated traverse body."""

    start: StartResolution
    steps: Step | list[Step]
    limits: Limits
    valid_at: dt.datetime | None
    as_of: dt.datetime | None
    kinds: list[str] | None = None
    relation_ids: dict[str, int] | None = None  # the vocabulary the request was checked with

    def run(self, bank: Bank) -> TraversalResult:
        result = traverse(
            bank,
            self.start.entry,
            self.steps,
            self.limits,
            self.valid_at,
            self.as_of,
            self.kinds,
            relation_ids=self.relation_ids,
        )
        result.start_given, result.start_matched = self.start.given, self.start.matched
        return result


TRAVERSE_FIELDS = {
    "start",
    "steps",
    "relations",
    "direction",
    "max_depth",
    "max_expansions",
    "max_paths",
    "max_evidence_tokens",
    "valid_at",
    "as_of",
    "kinds",
}
_LIMIT_RANGES = {
    "max_depth": (1, MAX_DEPTH),
    "max_expansions": (1, MAX_EXPANSIONS),
    "max_paths": (1, MAX_PATHS),
    "max_evidence_tokens": (0, MAX_EVIDENCE_TOKENS),
}


def clean_limit(
    name: str, value: Any, default: int | None, *, from_text: bool = False
) -> int | None:
    """An integer ceiling within its sane range (400 ``invalid_limit`` otherwise); with
    ``from_text`` (query parameters) digits in a string count as the number."""
    if value is None:
        return default
    low, high = _LIMIT_RANGES[name]
    if from_text and isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)  # query parameters arrive as text
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(
            f"{name} must be a whole number from {low} to {high:,}.",
            code="invalid_limit",
            fields={name: f"A whole number from {low} to {high}."},
        )
    return value


def clean_limits(
    data: dict, *, max_depth_default: int | None = None, from_text: bool = False
) -> Limits:
    defaults = Limits()

    def limit(name: str, default: int | None) -> int | None:
        return clean_limit(name, data.get(name), default, from_text=from_text)

    return Limits(
        max_depth=limit("max_depth", max_depth_default),
        max_expansions=limit("max_expansions", defaults.max_expansions),
        max_paths=limit("max_paths", defaults.max_paths),
        max_evidence_tokens=limit("max_evidence_tokens", defaults.max_evidence_tokens),
    )


def clean_clocks(data: dict) -> tuple[dt.datetime | None, dt.datetime | None]:
    """``valid_at`` (date or timestamp) and ``as_of`` (timestamp with a zone)."""
    return (
        parse_instant(data.get("valid_at"), "valid_at"),
        parse_instant(data.get("as_of"), "as_of", require_zone=True),
    )


def _relations(value: Any, field_name: str) -> tuple[str, ...]:
    if (
        not isinstance(value, list)
        or not value
        or len(value) > MAX_RELATIONS_PER_STEP
        or not all(isinstance(name, str) and name.strip() for name in value)
    ):
        raise InvalidInput(
            f"{field_name} must be a non-empty list of relation names.",
            code="invalid_relations",
            fields={field_name: "A non-empty list of relation names."},
        )
    return tuple(dict.fromkeys(name.strip() for name in value))


def _direction(value: Any, field_name: str) -> str:
    if value is None:
        return "out"
    if value not in DIRECTIONS:
        raise InvalidInput(
            f"{field_name} must be one of {', '.join(DIRECTIONS)}.",
            code="invalid_direction",
            fields={field_name: "out, in or both."},
        )
    return value


def clean_steps(value: Any) -> list[Step]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_DEPTH:
        raise InvalidInput(
            f"steps must be a list of 1 to {MAX_DEPTH} hops.",
            code="invalid_steps",
            fields={"steps": f"1 to {MAX_DEPTH} hops."},
        )
    steps = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or set(item) - {"relations", "direction"}:
            raise InvalidInput(
                f'steps[{i}] must be {{"relations": [...], "direction": "out" | "in" | "both"}}.',
                code="invalid_steps",
                fields={"steps": f"Item {i} is malformed."},
            )
        steps.append(
            Step(
                _relations(item.get("relations"), f"steps[{i}].relations"),
                _direction(item.get("direction"), f"steps[{i}].direction"),
            )
        )
    return steps


def resolve_start(bank: Bank, start: Any) -> StartResolution:
    """An id (short_id or key), ``{"id"}``, ``{"key"}`` or ``{"name"}`` (alias/fuzzy resolution:
    ambiguous → 400 ``ambiguous_start`` with the candidates; unknown → 404 ``entry_not_found``)."""
    if isinstance(start, str):
        start = {"id": start}
    if (
        not isinstance(start, dict)
        or len(start) != 1
        or next(iter(start)) not in ("id", "key", "name")
        or not isinstance(next(iter(start.values())), str)
        or not next(iter(start.values())).strip()
        or len(next(iter(start.values()))) > 300
    ):
        raise InvalidInput(
            'start must be an entry id, {"key": "..."} or {"name": "..."}.',
            code="invalid_start",
            fields={"start": "An id, {key} or {name}."},
        )
    ((how, text),) = start.items()
    text = text.strip()
    if how == "id":
        entry = find_entry(bank, text)
        matched = "short_id" if entry.short_id == text else "key" if entry.key == text else "merged"
        return StartResolution(entry, text, matched)
    if how == "key":
        entry = Entry.objects.filter(bank=bank, key=text).exclude(status=EntryStatus.DELETED)
        entry = entry.select_related("kind").first()
        if entry is None:
            raise NotFound(f"No entry with key {text!r} in this bank.", code="entry_not_found")
        return StartResolution(find_entry(bank, entry.short_id), start, "key")
    resolution = resolve(bank, text)
    if resolution.status == "ambiguous":
        raise InvalidInput(
            f"The name {text!r} is ambiguous; pick one of the candidates by id.",
            code="ambiguous_start",
            fields={"start": "Ambiguous name."},
            extra={"candidates": resolution.candidates},
        )
    if resolution.status != "resolved" or resolution.entry is None:
        raise NotFound(f"No entry named {text!r} in this bank.", code="entry_not_found")
    return StartResolution(resolution.entry, start, resolution.matched or "name")


def clean_traversal(bank: Bank, data: dict) -> TraversalRequest:
    """Validate a traverse body of API.md (every field, range and name) and resolve its start."""
    unknown = sorted(set(data) - TRAVERSE_FIELDS)
    if unknown:
        raise InvalidInput(
            f"Unknown fields: {', '.join(unknown)}.",
            code="invalid_input",
            fields=dict.fromkeys(unknown, "Unknown field."),
        )
    if "start" not in data:
        raise InvalidInput(
            "start is required.", code="invalid_start", fields={"start": "Required."}
        )
    has_steps = data.get("steps") is not None
    has_relations = data.get("relations") is not None
    if has_steps == has_relations:
        raise InvalidInput(
            "Give either steps (one allow-list per hop) or relations + direction + max_depth.",
            code="invalid_steps",
            fields={
                "steps": "Either steps or relations.",
                "relations": "Either steps or relations.",
            },
        )
    if has_steps and data.get("direction") is not None:
        raise InvalidInput(
            "direction belongs inside each step when steps are given.",
            code="invalid_steps",
            fields={"direction": "Put it in each step."},
        )
    types = relation_ids_for_bank(bank)
    if has_steps:
        steps: Step | list[Step] = clean_steps(data["steps"])
        for step in steps:
            _type_ids(step, types)
        limits = clean_limits(data)
    else:
        steps = Step(
            _relations(data["relations"], "relations"),
            _direction(data.get("direction"), "direction"),
        )
        _type_ids(steps, types)
        limits = clean_limits(data, max_depth_default=DEFAULT_DEPTH)
    valid_at, as_of = clean_clocks(data)
    kinds = clean_kinds(bank, data.get("kinds"))
    start = resolve_start(bank, data["start"])
    return TraversalRequest(start, steps, limits, valid_at, as_of, kinds, types)


def clean_kinds(bank: Bank, value: Any) -> list[str] | None:
    """``kinds``: null (every kind) or a non-empty list of the bank's kind names."""
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(name, str) for name in value)
        or len(value) > 100
    ):
        raise InvalidInput(
            "kinds must be a non-empty list of entry kind names.",
            code="invalid_kinds",
            fields={"kinds": "A list of kind names."},
        )
    check_known("kinds", value, kinds_for_bank(bank), what="kind(s)")
    return sorted(set(value))
