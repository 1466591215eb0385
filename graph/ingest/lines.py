"""The graph's line types for JSON Lines import/export: ``relation``, ``alias`` and ``edge``.

Registered with kb's bulk module in ``GraphConfig.ready``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from graph.edges.clocks import intervals_overlap, parse_instant
from graph.edges.links import LinkRequest, check_note, close_edge, write_edge
from graph.edges.vocab import edge_types_for_bank
from graph.models import Alias, Edge, EdgeSource, EdgeType, FoldRole, WorkflowRole
from graph.resolution.aliases import normalize
from kb.errors import Conflict, InvalidInput
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
        from kb import audit

        for item in items:
            entry = state.entry(item.data["ref"])
            alias = Alias.objects.filter(
                bank=state.bank, normalized=item.data["normalized"], entry=entry
            ).first()
            if alias is None:
                Alias.objects.create(
                    bank=state.bank,
                    entry=entry,
                    surface=item.data["surface"],
                    normalized=item.data["normalized"],
                    source=item.data["source"],
                    actor=audit.current().actor,
                )
                state.counts["aliases_created"] = state.counts.get("aliases_created", 0) + 1

    def export(self, bank: Bank) -> Iterable[dict]:
        for alias in Alias.objects.filter(bank=bank).select_related("entry").order_by("id"):
            if alias.entry.status in ("live", "retired", "cancelled", "done"):
                yield {
                    "type": "alias",
                    "entry": alias.entry.short_id,
                    "alias": alias.surface,
                    "source": alias.source,
                }


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
        if source not in EdgeSource.values:
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
        target_text = ctx.entry_text(obj["to"])

        class _Target:  # the note rule reads the target's text, which may be in the file
            title = target_text["title"]
            summary = target_text["summary"]
            content = target_text["content"]
            useful_for = target_text["useful_for"]

        note = check_note(note, _Target)
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
        types = edge_types_for_bank(state.bank)
        for done, item in enumerate(items, start=1):
            d = item.data
            req = LinkRequest(
                state.entry(d["from"]),
                state.entry(d["to"]),
                types[d["relation"]],
                d["note"],
                d["evidence"],
                d["label"],
                d["valid_from"],
                d["valid_to"],
                d["source"],
            )
            believed = list(
                Edge.objects.filter(  # by its ends (they imply the bank): the planner
                    from_entry=req.from_entry,  # then uses the edge index, not a bank scan
                    to_entry=req.to_entry,
                    type=req.type,
                    invalidated_at__isnull=True,
                )
            )
            same_interval = [
                e for e in believed if e.valid_from == req.valid_from and e.valid_to == req.valid_to
            ]
            if same_interval and _same_edge(same_interval[0], req):
                state.counts["edges_unchanged"] = state.counts.get("edges_unchanged", 0) + 1
                continue
            overlapping = [
                e
                for e in believed
                if intervals_overlap(e.valid_from, e.valid_to, req.valid_from, req.valid_to)
            ]
            if overlapping:
                # The file's version replaces what the bank believed for that time.
                for old in overlapping:
                    close_edge(old, "re-imported with changes")
                write_edge(state.bank, req, replaces=overlapping[0])
                state.counts["edges_updated"] = state.counts.get("edges_updated", 0) + 1
                continue
            try:
                write_edge(state.bank, req)
            except Conflict as exc:
                raise InvalidInput(f"line {item.line}: {exc.message}") from exc
            state.counts["edges_created"] = state.counts.get("edges_created", 0) + 1
            if progress and done % 500 == 0:
                progress("edges", done, len(items))

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
