"""The merge preview shown before a merge (what will happen to each edge and alias)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from django.db.models import Q

from graph.admin.common import (
    _relation_label,
)
from graph.curation import merge as curation
from graph.edges import links as edge_service
from graph.edges.clocks import intervals_overlap
from graph.models import (
    Alias,
    Edge,
)
from graph.resolution import aliases as alias_service
from kb.models import Entry

# --- Merge preview ----------------------------------------------------------------------------


@dataclass
class EdgeFate:
    """What a merge does to one believed edge of ``away``."""

    edge: Edge
    fate: str  # repointed | collapses | self_loop
    new_from: Entry
    new_to: Entry
    into: Edge | None = None  # the believed edge a collapsing one folds into (None: re-pointed)


@dataclass
class MergePreview:
    """Exactly what :func:`graph.curation.merge.merge_entries` will do, computed read-only."""

    keep: Entry
    away: Entry
    edges: list[EdgeFate] = field(default_factory=list)
    aliases_moved: list[Alias] = field(default_factory=list)
    aliases_new: list[str] = field(default_factory=list)

    def of(self, fate: str) -> list[EdgeFate]:
        return [f for f in self.edges if f.fate == fate]

    @property
    def repointed(self) -> list[EdgeFate]:
        return self.of("repointed")

    @property
    def collapsed(self) -> list[EdgeFate]:
        return self.of("collapses")

    @property
    def self_loops(self) -> list[EdgeFate]:
        return self.of("self_loop")

    def counts(self) -> dict:
        """The same numbers as :meth:`MergeResult.as_json`."""
        return {
            "edges_repointed": len(self.repointed),
            "edges_collapsed": len(self.collapsed),
            "aliases_added": len(self.aliases_moved) + len(self.aliases_new),
            "self_loops_dropped": [f.edge.pk for f in self.self_loops],
        }


def preview_merge(keep: Entry, away: Entry) -> MergePreview:
    """Mirror of ``merge_entries``' rules, writing nothing: each believed edge of ``away``, in
    id order, is dropped as a self-loop (its other end is ``keep``), collapses into a believed
    edge of the same (from, to, type) with overlapping valid time (one already there or one
    re-pointed earlier in the same merge), or is re-pointed; ``away``'s aliases move to
    ``keep`` and its short_id, key and title become aliases unless that form is taken."""
    bank_id = keep.bank_id
    preview = MergePreview(keep, away)
    away_edges = list(
        Edge.objects.filter(bank_id=bank_id, invalidated_at__isnull=True)
        .filter(Q(from_entry=away) | Q(to_entry=away))
        .select_related("type", "from_entry", "to_entry")
        .order_by("id")
    )
    # Every re-pointed edge has keep at one end, so only keep's believed edges can clash.
    believed: list[tuple[tuple, tuple, Edge]] = [
        ((e.from_entry_id, e.to_entry_id, e.type_id), (e.valid_from, e.valid_to), e)
        for e in Edge.objects.filter(bank_id=bank_id, invalidated_at__isnull=True)
        .filter(Q(from_entry=keep) | Q(to_entry=keep))
        .exclude(pk__in=[e.pk for e in away_edges])
        .select_related("type", "from_entry", "to_entry")
        .order_by("id")
    ]
    for edge in away_edges:
        new_from = keep if edge.from_entry_id == away.pk else edge.from_entry
        new_to = keep if edge.to_entry_id == away.pk else edge.to_entry
        if new_from.pk == new_to.pk:
            preview.edges.append(EdgeFate(edge, "self_loop", new_from, new_to))
            continue
        triple = (new_from.pk, new_to.pk, edge.type_id)
        clash = next(
            (
                other
                for key, interval, other in believed
                if key == triple and intervals_overlap(*interval, edge.valid_from, edge.valid_to)
            ),
            None,
        )
        same_triple = [(interval, other) for key, interval, other in believed if key == triple]
        current = next((other for _, other in same_triple if other.is_current()), None)
        remainder = curation.uncovered_interval(
            edge.valid_from, edge.valid_to, [interval for interval, _ in same_triple]
        )
        if current is not None or remainder is None:
            preview.edges.append(EdgeFate(edge, "collapses", new_from, new_to, current or clash))
            continue
        preview.edges.append(EdgeFate(edge, "repointed", new_from, new_to))
        edge = copy.copy(edge)
        edge.valid_from, edge.valid_to = remainder
        # Mirrors write_edge seeing this merge's own successors; the database's one-believed-
        # row rule on away's edges makes a clash with one of them unreachable in practice.
        believed.append((triple, (edge.valid_from, edge.valid_to), edge))

    preview.aliases_moved = list(Alias.objects.filter(bank_id=bank_id, entry=away))
    surfaces = [s for s in (away.short_id, away.key, away.title) if s]
    forms_of = {s: alias_service.normalize(s) for s in surfaces}
    taken = set(
        Alias.objects.filter(bank_id=bank_id, entry__in=[keep, away]).values_list(
            "normalized", flat=True
        )
    )
    for surface in surfaces:
        norm = forms_of[surface]
        if norm and norm not in taken:
            preview.aliases_new.append(surface)
            taken.add(norm)
    return preview


def edges_table(entry: Entry) -> list[dict]:
    """An entry's current edges as rows seen from the entry (direction, relation, other end)."""
    rows = []
    for edge in edge_service.current_edges_of(entry):
        outgoing = edge.from_entry_id == entry.pk
        rows.append(
            {
                "edge": edge,
                "direction": "→" if outgoing else "←",
                "relation": _relation_label(edge)
                if outgoing
                else edge.type.inverse or edge.type.name,
                "other": edge.to_entry if outgoing else edge.from_entry,
                "note": edge.note,
            }
        )
    return rows
