"""What the merge and proposal pages show about a pair: each entry's current edges. The merge
preview itself is :func:`graph.curation.merge.plan_merge` (the plan the merge executes)."""

from __future__ import annotations

from graph.admin.common import _relation_label
from graph.edges import links as edge_service
from kb.models import Entry


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
