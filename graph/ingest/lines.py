"""The graph's line types for JSON Lines import/export: ``relation``, ``alias`` and ``edge``.

Registered with kb's bulk module in ``GraphConfig.ready``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from types import SimpleNamespace

from django.db import IntegrityError, transaction
from django.utils import timezone

from graph.curation.edge_rows import close_edges
from graph.edges.clocks import intervals_overlap, parse_instant
from graph.edges.links import LinkRequest, check_note, lock_entries
from graph.edges.vocab import edge_types_for_bank
from graph.models import Alias, Edge, EdgeSource, EdgeType, FoldRole, WorkflowRole
from graph.resolution.aliases import normalize
from kb import audit
from kb.errors import InvalidInput
from kb.history_rows import copy_rows
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

    def validate(self, ctx: ImportContext, line: int, obj: dict) -> dict:
        unknown = sorted(set(obj) - {"type", "entry", "alias", "source"})
        if unknown:
            raise InvalidInput(f"Unknown fields on an alias line: {', '.join(unknown)}.")
        ref, surface = obj.get("entry"), obj.get("alias")
        if not isinstance(ref, str) or not ctx.entry_exists(ref):
            raise InvalidInput(f"alias names no entry of the file or bank: {ref!r}.")
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
        from kb import audit

        taken = set(Alias.objects.filter(bank=state.bank).values_list("normalized", "entry_id"))
        now = timezone.now()
        rows = []
        for item in items:
            norm = item.data["normalized"]
            entry_id = state.entry(item.data["ref"]).pk
            if (norm, entry_id) in taken:  # only the same (form, entry) pair is skipped
                continue
            taken.add((norm, entry_id))
            rows.append(
                Alias(
                    bank=state.bank,
                    entry_id=entry_id,
                    surface=item.data["surface"],
                    normalized=norm,
                    source=item.data["source"],
                    actor=audit.current().actor,
                    created_at=now,
                )
            )
        copy_rows(Alias, rows, progress=progress, phase="writing aliases", when=now)
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


def _same_edge(edge: Edge, req: LinkRequest) -> bool:
    return (
        edge.note == req.note
        and edge.label == req.label
        and edge.evidence == req.evidence
        and edge.source == req.source
    )


class EdgeLines:
    order = 3
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
        unknown = sorted(set(obj) - self.fields)
        if unknown:
            raise InvalidInput(f"Unknown fields on an edge line: {', '.join(unknown)}.")
        ends = {}
        for name in ("from", "to"):
            ref = obj.get(name)
            if not isinstance(ref, str) or not ctx.entry_exists(ref):
                raise InvalidInput(f"{name} names no entry of the file or bank: {ref!r}.")
            ends[name] = ctx.canonical_ref(ref)
        if ends["from"] == ends["to"]:
            raise InvalidInput("An edge cannot join an entry to itself.")
        relation = obj.get("relation")
        types = _types(ctx)
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
        if isinstance(evidence, str):
            evidence = {"text": evidence}
        if not isinstance(evidence, dict):
            raise InvalidInput("evidence must be an object or a string.")
        valid_from = parse_instant(obj.get("valid_from"), "valid_from")
        valid_to = parse_instant(obj.get("valid_to"), "valid_to")
        if valid_from and valid_to and valid_from >= valid_to:
            raise InvalidInput("valid_from must be before valid_to.")
        note = obj.get("note") or ""
        if note or not isinstance(note, str):
            # The note rule reads the target's text, which may be in the file.
            note = check_note(note, SimpleNamespace(**ctx.entry_text(obj["to"])))
        # One triple may appear once per valid interval; overlapping intervals are duplicates.
        triple = (ends["from"], ends["to"], relation)
        seen = ctx.extra.setdefault("edge_triples", {})
        for other_line, lo, hi in seen.get(triple, []):
            if intervals_overlap(lo, hi, valid_from, valid_to):
                raise InvalidInput(
                    f"Duplicate edge {' '.join(triple)} (first on line {other_line})."
                )
        seen.setdefault(triple, []).append((line, valid_from, valid_to))
        return {
            "from": obj["from"],
            "to": obj["to"],
            "relation": relation,
            "label": str(label).strip(),
            "note": note,
            "evidence": evidence,
            "source": source,
            "valid_from": valid_from,
            "valid_to": valid_to,
        }

    def apply(self, state: ApplyState, items: list[PlannedLine], progress: Progress | None) -> None:
        """Compare every line with what the bank believes (one read), then close the edges
        the file changes and append the new rows set-wise (COPY), each with history rows."""
        types = edge_types_for_bank(state.bank)
        believed: dict[tuple, list[Edge]] = {}
        for edge in (
            Edge.objects.filter(bank=state.bank, invalidated_at__isnull=True)
            .only(
                "id",
                "from_entry_id",
                "to_entry_id",
                "type_id",
                "valid_from",
                "valid_to",
                "note",
                "label",
                "evidence",
                "source",
            )
            .iterator(chunk_size=20_000)
        ):
            believed.setdefault((edge.from_entry_id, edge.to_entry_id, edge.type_id), []).append(
                edge
            )
        now = timezone.now()
        actor = audit.current().actor
        to_close: dict[int, str] = {}
        rows: list[Edge] = []
        lines: dict[int, int] = {}  # entry id -> a line that writes an edge to it
        for item in items:
            d = item.data
            source, target = state.entry(d["from"]), state.entry(d["to"])
            req = LinkRequest(
                source,
                target,
                types[d["relation"]],
                d["note"],
                d["evidence"],
                d["label"],
                d["valid_from"],
                d["valid_to"],
                d["source"],
            )
            same = believed.get((source.pk, target.pk, req.type.pk), [])
            same_interval = [
                e for e in same if e.valid_from == req.valid_from and e.valid_to == req.valid_to
            ]
            if same_interval and _same_edge(same_interval[0], req):
                state.counts["edges_unchanged"] = state.counts.get("edges_unchanged", 0) + 1
                continue
            overlapping = [
                e
                for e in same
                if e.pk not in to_close
                and intervals_overlap(e.valid_from, e.valid_to, req.valid_from, req.valid_to)
            ]
            for old in overlapping:  # the file's version replaces what the bank believed
                to_close[old.pk] = "re-imported with changes"
            key = "edges_updated" if overlapping else "edges_created"
            state.counts[key] = state.counts.get(key, 0) + 1
            lines.setdefault(source.pk, item.line)
            lines.setdefault(target.pk, item.line)
            rows.append(
                Edge(
                    bank=state.bank,
                    from_entry_id=source.pk,
                    to_entry_id=target.pk,
                    type=req.type,
                    label=req.label,
                    note=req.note,
                    evidence=req.evidence or {},
                    source=req.source,
                    actor=actor,
                    valid_from=req.valid_from,
                    valid_to=req.valid_to,
                    recorded_at=now,
                    replaces_id=overlapping[0].pk if overlapping else None,
                )
            )
        _require_linkable_ends(lines)
        close_edges(to_close, now)
        try:
            with transaction.atomic():
                copy_rows(Edge, rows, progress=progress, phase="writing edges", when=now)
        except IntegrityError as exc:  # a concurrent writer added the same edge meanwhile
            raise InvalidInput(f"An edge of the file was written meanwhile: {exc}") from exc

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


def register() -> None:
    register_line_type("relation", RelationLines())
    register_line_type("alias", AliasLines())
    register_line_type("edge", EdgeLines())
