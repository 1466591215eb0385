"""Traversal requests on a bank: a traverse input the action's declaration has validated
(:mod:`graph.actions.traverse_input`: shapes, bounds, defaults, the steps-or-relations rule)
checked against what only the bank knows — its relations and kinds — and its start resolved."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from graph.edges.vocab import relation_ids_for_bank
from graph.resolution.aliases import resolve
from graph.traversal.walk import (
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
    """A traverse input resolved on its bank."""

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


def resolve_start(bank: Bank, how: str, text: str) -> StartResolution:
    """The start named by an id (short_id or key), a key or a name (alias/fuzzy resolution:
    ambiguous → 400 ``ambiguous_start`` with the candidates; unknown → 404
    ``entry_not_found``)."""
    if how == "id":
        entry = find_entry(bank, text)
        matched = "short_id" if entry.short_id == text else "key" if entry.key == text else "merged"
        return StartResolution(entry, text, matched)
    given = {how: text}
    if how == "key":
        entry = Entry.objects.filter(bank=bank, key=text).exclude(status=EntryStatus.DELETED)
        entry = entry.select_related("kind").first()
        if entry is None:
            raise NotFound(f"No entry with key {text!r} in this bank.", code="entry_not_found")
        return StartResolution(find_entry(bank, entry.short_id), given, "key")
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
    return StartResolution(resolution.entry, given, resolution.matched or "name")


def traversal_request(bank: Bank, data: dict) -> TraversalRequest:
    """The validated input of ``TraverseGraph`` on ``bank``: relations in the bank's
    vocabulary (400 ``invalid_value``), kinds among its kinds, the start resolved."""
    types = relation_ids_for_bank(bank)
    if data.get("steps") is not None:
        steps: Step | list[Step] = data["steps"]
        for step in steps:
            _type_ids(step, types)
    else:
        steps = Step(data["relations"], data.get("direction") or "out")
        _type_ids(steps, types)
    limits = Limits(
        max_depth=data["max_depth"],
        max_expansions=data["max_expansions"],
        max_paths=data["max_paths"],
        max_evidence_tokens=data["max_evidence_tokens"],
    )
    kinds = data.get("kinds")
    if kinds is not None:
        check_known("kinds", kinds, kinds_for_bank(bank), what="kind(s)")
    start = resolve_start(bank, *data["start"])
    return TraversalRequest(
        start, steps, limits, data.get("valid_at"), data.get("as_of"), kinds, types
    )
