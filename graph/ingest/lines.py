"""The graph's line types for JSON Lines import/export: ``relation``, ``alias`` and ``edge``.

Registered with kb's bulk module in ``GraphConfig.ready``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from types import SimpleNamespace

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from graph.curation.edge_rows import close_edges
from graph.edges.clocks import intervals_overlap, parse_instant
from graph.edges.links import check_note, lock_entries
from graph.edges.vocab import edge_types_for_bank
from graph.models import Alias, Edge, EdgeSource, EdgeType, FoldRole, WorkflowRole
from graph.resolution.aliases import normalize
from kb import audit
from kb.errors import InvalidInput
from kb.history_rows import copy_dicts
from kb.models import Bank
from kb.services.bulk import (
    ApplyState,
    ImportContext,
    PlannedLine,
    Progress,
    register_line_type,
    upsert_vocabulary,
)

NAME = re.compile(r"^[a-z0-9_-]{1,64}$")
EDGE_SOURCES = frozenset(EdgeSource.values)


def _types(ctx: ImportContext) -> dict:
    if "edge_types" not in ctx.extra:
        ctx.extra["edge_types"] = edge_types_for_bank(ctx.bank)
    return ctx.extra["edge_types"]


class RelationLines:
    order = 0

    def validate(self, ctx: ImportContext, line: int, obj: dict) -> dict:
        allowed = {
            "type",
            "name",
            "inverse",
            "fold_role",
            "transitive",
            "workflow_role",
            "neighbor_priority",
            "score_weight",
            "description",
            "phrases",
            "inverse_phrases",
        }
        unknown = sorted(set(obj) - allowed)
        if unknown:
            raise InvalidInput(f"Unknown fields on a relation line: {', '.join(unknown)}.")
        name = obj.get("name")
        if not isinstance(name, str) or not NAME.match(name):
            raise InvalidInput("A relation needs a name of lowercase letters, digits, '_' or '-'.")
        fold_role = obj.get("fold_role") or ""
        workflow_role = obj.get("workflow_role") or ""
        if fold_role not in FoldRole.values:
            raise InvalidInput("fold_role must be null, 'dominates' or 'parent'.")
        if workflow_role not in WorkflowRole.values:
            raise InvalidInput(
                "workflow_role must be null, 'precedes', 'requires', 'produces' or 'owned_by'."
            )
        for numeric in ("neighbor_priority", "score_weight"):
            if numeric in obj and (
                not isinstance(obj[numeric], int | float) or isinstance(obj[numeric], bool)
            ):
                raise InvalidInput(f"{numeric} must be a number.")
        data = {
            "name": name,
            "inverse": str(obj.get("inverse") or "")[:64],
            "fold_role": fold_role,
            "transitive": bool(obj.get("transitive", False)),
            "workflow_role": workflow_role,
            "neighbor_priority": int(obj.get("neighbor_priority", 20)),
            "score_weight": float(obj.get("score_weight", 1.0)),
            "description": str(obj.get("description") or "")[:300],
        }
        for field in ("phrases", "inverse_phrases"):  # only when given: keep admin edits
            if field in obj:
                data[field] = _phrases(obj[field], field)
        types = _types(ctx)
        if name in types and types[name].bank_id is None:
            return {"core": True, "name": name}
        types.setdefault(name, EdgeType(bank=ctx.bank, **data))
        return data

    def present(self, ctx: ImportContext, obj: dict) -> bool:
        return obj.get("name") in _types(ctx)

    def apply(self, state: ApplyState, items: list[PlannedLine], progress: Progress | None) -> None:
        upsert_vocabulary(state, EdgeType, items, "relations")

    def export(self, bank: Bank) -> Iterable[dict]:
        for t in EdgeType.objects.filter(bank=bank).order_by("name"):
            yield {
                "type": "relation",
                "name": t.name,
                "inverse": t.inverse,
                "fold_role": t.fold_role or None,
                "transitive": t.transitive,
                "workflow_role": t.workflow_role or None,
                "neighbor_priority": t.neighbor_priority,
                "score_weight": t.score_weight,
                "description": t.description,
                "phrases": t.phrases,
                "inverse_phrases": t.inverse_phrases,
            }


def _phrases(value, field: str) -> list[str]:
    """Relation phrases of a relation line (read by the local edge extractor)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"{field} must be a list of strings.")
    cleaned = [v.strip() for v in value if v.strip()]
    if len(cleaned) > 50 or any(len(v) > 100 for v in cleaned):
        raise InvalidInput(f"{field}: at most 50 phrases of at most 100 characters.")
    return cleaned


class AliasLines:
    order = 2

    def present(self, ctx: ImportContext, obj: dict) -> bool:
        """The named entry is gone, or this (form, entry) pair exists or existed."""
        named, surface = obj.get("entry"), obj.get("alias")
        ref = ctx.refs().get(named) if isinstance(named, str) else None
        if ref is None:
            return ctx.deleted(named) is not None if isinstance(named, str) else False
        pk = ctx.bank_pk(ref)
        if pk is None or not isinstance(surface, str):
            return False
        ever = ctx.extra.get("alias_pairs")
        if ever is None:
            rows = Alias.history.filter(bank_id=ctx.bank.pk).values_list("normalized", "entry_id")
            ever = ctx.extra["alias_pairs"] = set(rows)
        return (normalize(surface), pk) in ever

    def validate(self, ctx: ImportContext, line: int, obj: dict) -> dict:
        unknown = sorted(set(obj) - {"type", "entry", "alias", "source"})
        if unknown:
            raise InvalidInput(f"Unknown fields on an alias line: {', '.join(unknown)}.")
        named, surface = obj.get("entry"), obj.get("alias")
        ref = ctx.refs().get(named) if isinstance(named, str) else None  # merged: survivor
        if ref is None:
            raise ctx.unknown_ref(named, "alias")
        if not isinstance(surface, str) or not normalize(surface) or len(surface) > 300:
            raise InvalidInput("alias must be a non-empty string of at most 300 characters.")
        norm = normalize(surface)
        # A form may name several entries (a virtual package provided by many): each
        # (form, entry) pair is kept; only the same pair twice is a no-op.
        return {
            "ref": ref,
            "surface": surface.strip(),
            "normalized": norm,
            "source": str(obj.get("source") or "import")[:20],
        }

    def apply(self, state: ApplyState, items: list[PlannedLine], progress: Progress | None) -> None:
        """Add the (form, entry) pairs the bank does not have yet: one read, then COPY with
        history. A form may name several entries; only the same pair twice is a no-op."""
        taken = set(Alias.objects.filter(bank=state.bank).values_list("normalized", "entry_id"))
        now = timezone.now()
        actor = audit.current().actor
        rows = []
        for item in items:
            norm = item.data["normalized"]
            entry_id = state.entry(item.data["ref"])
            if (norm, entry_id) in taken:  # only the same (form, entry) pair is skipped
                continue
            taken.add((norm, entry_id))
            rows.append(
                {
                    "bank_id": state.bank.pk,
                    "entry_id": entry_id,
                    "surface": item.data["surface"],
                    "normalized": norm,
                    "source": item.data["source"],
                    "actor": actor,
                    "created_at": now,
                }
            )
        copy_dicts(Alias, rows, progress=progress, phase="writing aliases", when=now)
        if rows:
            state.counts["aliases_created"] = state.counts.get("aliases_created", 0) + len(rows)

    def export(self, bank: Bank) -> Iterable[dict]:
        for alias in Alias.objects.filter(bank=bank).select_related("entry").order_by("id"):
            if alias.entry.status in ("live", "retired", "cancelled", "done"):
                yield {
                    "type": "alias",
                    "entry": alias.entry.short_id,
                    "alias": alias.surface,
                    "source": alias.source,
                }


def _require_linkable_ends(lines: dict[int, int]) -> None:
    """Share-lock every entry that gains an edge (a merge or delete of one waits for the
    import); an end merged or deleted meanwhile fails the line that names it."""
    if not lines:
        return
    states = lock_entries(lines)
    for pk, line in sorted(lines.items(), key=lambda kv: kv[1]):
        status = states.get(pk, ("deleted", None))[0]
        if status in ("merged", "deleted"):
            raise InvalidInput(
                f"line {line}: an entry of this edge was {status}; link the survivor."
            )


def _ever_linked(ctx: ImportContext) -> set[tuple[int, int, int]]:
    """Every (from, to, type) the bank ever had an edge for, closed and reverted ones too."""
    ever = ctx.extra.get("edge_triples_ever")
    if ever is None:
        rows = Edge.history.filter(bank_id=ctx.bank.pk).values_list(
            "from_entry_id", "to_entry_id", "type_id"
        )
        ever = ctx.extra["edge_triples_ever"] = set(rows.distinct())
    return ever


class EdgeLines:
    order = 3

    def present(self, ctx: ImportContext, obj: dict) -> bool:
        """An end is gone, the ends are one entry now (merged), or the bank has or had an edge
        of this relation between them (a curator may have unlinked it)."""
        refs = ctx.refs()
        ends = []
        for ref in (obj.get("from"), obj.get("to")):
            canonical = refs.get(ref) if isinstance(ref, str) else None
            if canonical is None:
                return isinstance(ref, str) and ctx.deleted(ref) is not None
            ends.append(canonical)
        if ends[0] == ends[1]:
            return ctx.bank_pk(ends[0]) is not None  # two entries merged into one
        source, target = ctx.bank_pk(ends[0]), ctx.bank_pk(ends[1])
        relation = _types(ctx).get(obj.get("relation"))
        if source is None or target is None or relation is None or relation.pk is None:
            return False
        return (source, target, relation.pk) in _ever_linked(ctx)

    fields = {
        "type",
        "from",
        "to",
        "relation",
        "label",
        "note",
        "evidence",
        "source",
        "valid_from",
        "valid_to",
    }

    def validate(self, ctx: ImportContext, line: int, obj: dict) -> dict:
        if not obj.keys() <= self.fields:
            unknown = sorted(set(obj) - self.fields)
            raise InvalidInput(f"Unknown fields on an edge line: {', '.join(unknown)}.")
        refs = ctx.refs()  # every name of an entry → its one canonical name, built once
        source_ref, target_ref = obj.get("from"), obj.get("to")
        ends = {}
        for name, ref in (("from", source_ref), ("to", target_ref)):
            canonical = refs.get(ref) if isinstance(ref, str) else None
            if canonical is None:
                raise ctx.unknown_ref(ref, name)
            ends[name] = canonical
        if ends["from"] == ends["to"]:
            raise InvalidInput("An edge cannot join an entry to itself.")
        relation = obj.get("relation")
        types = ctx.extra.get("edge_types") or _types(ctx)
        if relation not in types:
            raise InvalidInput(
                f"Unknown relation {relation!r}: declare it with a relation line first, or use "
                '"relation": "other" with a "label".'
            )
        label = obj.get("label") or ""
        if relation == "other" and not (isinstance(label, str) and label.strip()):
            raise InvalidInput("An 'other' relation needs a 'label'.")
        source = obj.get("source") or EdgeSource.IMPORT
        if source not in EDGE_SOURCES:
            raise InvalidInput(f"source must be one of {', '.join(EdgeSource.values)}.")
        evidence = obj.get("evidence") or {}
        if type(evidence) is not dict:
            if isinstance(evidence, str):
                evidence = {"text": evidence}
            elif not isinstance(evidence, dict):
                raise InvalidInput("evidence must be an object or a string.")
        raw_from, raw_to = obj.get("valid_from"), obj.get("valid_to")
        valid_from = None if raw_from is None else parse_instant(raw_from, "valid_from")
        valid_to = None if raw_to is None else parse_instant(raw_to, "valid_to")
        if valid_from and valid_to and valid_from >= valid_to:
            raise InvalidInput("valid_from must be before valid_to.")
        note = obj.get("note") or ""
        if note or not isinstance(note, str):
            # The note rule reads the target's text, which may be in the file.
            note = check_note(note, SimpleNamespace(**ctx.entry_text(target_ref)))
        # One triple may appear once per valid interval; overlapping intervals are duplicates.
        triple = (ends["from"], ends["to"], relation)
        seen = ctx.extra.get("edge_triples")
        if seen is None:
            seen = ctx.extra["edge_triples"] = {}
        earlier = seen.get(triple)
        if earlier is None:
            seen[triple] = [(line, valid_from, valid_to)]
        else:
            for other_line, lo, hi in earlier:
                if intervals_overlap(lo, hi, valid_from, valid_to):
                    raise InvalidInput(
                        f"Duplicate edge {' '.join(triple)} (first on line {other_line})."
                    )
            earlier.append((line, valid_from, valid_to))
        return {
            "from": ends["from"],  # a merged-away entry's names resolve to its survivor
            "to": ends["to"],
            "relation": relation,
            "label": str(label).strip(),
            "note": note,
            "evidence": evidence,
            "source": source,
            "valid_from": valid_from,
            "valid_to": valid_to,
        }

    def apply(self, state: ApplyState, items: list[PlannedLine], progress: Progress | None) -> None:
        """Compare every line with what the bank believes (one read of plain values), then
        close the edges the file changes and append the new rows set-wise (COPY of plain rows,
        no model instances), each with history rows."""
        started = time.perf_counter()
        believed = _believed_edges(state.bank.pk)
        read = time.perf_counter()
        now = timezone.now()
        plan = _plan_edges(state, items, believed, now)
        for key, value in (
            ("edges_unchanged", plan.unchanged),
            ("edges_created", plan.created),
            ("edges_updated", plan.updated),
        ):
            if value:
                state.counts[key] = state.counts.get(key, 0) + value
        planned = time.perf_counter()
        _require_linkable_ends(plan.lines)
        close_edges(plan.to_close, now)
        try:
            with transaction.atomic():
                copy_dicts(Edge, plan.rows, progress=progress, phase="writing edges", when=now)
        except IntegrityError as exc:  # a concurrent writer added the same edge meanwhile
            raise InvalidInput(f"An edge of the file was written meanwhile: {exc}") from exc
        state.timings["edges: read believed"] = read - started
        state.timings["edges: compare"] = planned - read
        state.timings["edges: lock, close, COPY + history"] = time.perf_counter() - planned

    def export(self, bank: Bank) -> Iterable[dict]:
        edges = (
            Edge.objects.filter(bank=bank, invalidated_at__isnull=True)
            .exclude(from_entry__status__in=["merged", "deleted"])
            .exclude(to_entry__status__in=["merged", "deleted"])
            .select_related("type", "from_entry", "to_entry")
            .order_by("id")
        )
        for e in edges.iterator(chunk_size=5000):
            line = {
                "type": "edge",
                "from": e.from_entry.short_id,
                "to": e.to_entry.short_id,
                "relation": e.type.name,
                "note": e.note,
                "source": e.source,
            }
            if e.label:
                line["label"] = e.label
            if e.evidence:
                line["evidence"] = e.evidence
            if e.valid_from:
                line["valid_from"] = e.valid_from.isoformat()
            if e.valid_to:
                line["valid_to"] = e.valid_to.isoformat()
            yield line


def _believed_edges(bank_id: int) -> dict[tuple, list[tuple]]:
    """The bank's believed edges as plain values, by (from, to, type)."""
    believed: dict[tuple, list[tuple]] = {}
    with connection.cursor() as cur:
        cur.execute(
            "SELECT from_entry_id, to_entry_id, type_id, id, valid_from, valid_to, note, "
            "label, evidence::text, source FROM graph_edge "
            "WHERE bank_id = %s AND invalidated_at IS NULL",
            [bank_id],
        )
        for row in cur:
            believed.setdefault(row[:3], []).append(row[3:])
    return believed


def _repeated(same: list[tuple], d: dict) -> int | None:
    """The believed edge (its id) that line ``d`` repeats unchanged; None when the line is
    new or changes the edge of its interval."""
    for pk, lo, hi, note, label, evidence, edge_source in same:
        if lo == d["valid_from"] and hi == d["valid_to"]:
            unchanged = (
                note == d["note"]
                and label == d["label"]
                and edge_source == d["source"]
                and json.loads(evidence) == d["evidence"]
            )
            return pk if unchanged else None
    return None


@dataclass
class _EdgePlan:
    """What the edge lines of a file do: new rows, believed edges to close, counts."""

    rows: list[dict] = dataclasses.field(default_factory=list)
    to_close: dict[int, str] = dataclasses.field(default_factory=dict)
    lines: dict[int, int] = dataclasses.field(default_factory=dict)  # entry id → a linking line
    unchanged: int = 0
    created: int = 0
    updated: int = 0


def _plan_edges(state: ApplyState, items: list[PlannedLine], believed: dict, now) -> _EdgePlan:
    type_ids = {name: t.pk for name, t in edge_types_for_bank(state.bank).items()}
    actor, bank_id, ids = audit.current().actor, state.bank.pk, state.by_ref
    plan = _EdgePlan()
    for item in items:
        d = item.data
        source, target, type_id = ids[d["from"]], ids[d["to"]], type_ids[d["relation"]]
        same = believed.get((source, target, type_id))
        valid_from, valid_to = d["valid_from"], d["valid_to"]
        overlapping = []
        if same is not None:
            if _repeated(same, d) is not None:
                plan.unchanged += 1
                continue
            overlapping = [
                e[0]
                for e in same
                if e[0] not in plan.to_close and intervals_overlap(e[1], e[2], valid_from, valid_to)
            ]
        for old in overlapping:  # the file's version replaces what the bank believed
            plan.to_close[old] = "re-imported with changes"
        if overlapping:
            plan.updated += 1
        else:
            plan.created += 1
        plan.lines.setdefault(source, item.line)
        plan.lines.setdefault(target, item.line)
        plan.rows.append(
            {
                "bank_id": bank_id,
                "from_entry_id": source,
                "to_entry_id": target,
                "type_id": type_id,
                "label": d["label"],
                "note": d["note"],
                "evidence": d["evidence"] or {},
                "source": d["source"],
                "actor": actor,
                "valid_from": valid_from,
                "valid_to": valid_to,
                "recorded_at": now,
                "replaces_id": overlapping[0] if overlapping else None,
            }
        )
    return plan


def register() -> None:
    register_line_type("relation", RelationLines())
    register_line_type("alias", AliasLines())
    register_line_type("edge", EdgeLines())
