"""JSON shapes of the graph API (edges, an entry's edges and aliases)."""

from __future__ import annotations

from graph.edges.links import current_edges_of
from graph.edges.notes import note_as_seen
from graph.models import Alias, Edge
from kb.api.render import iso
from kb.models import Entry


def edge_json(edge: Edge) -> dict:
    return {
        "id": edge.pk,
        "from": edge.from_entry.short_id,
        "to": edge.to_entry.short_id,
        "relation": edge.type.name,
        "label": edge.label or None,
        "note": edge.note,
        "evidence": edge.evidence,
        "source": edge.source,
        "actor": edge.actor,
        "valid_from": iso(edge.valid_from),
        "valid_to": iso(edge.valid_to),
        "recorded_at": iso(edge.recorded_at),
        "invalidated_at": iso(edge.invalidated_at),
        "replaces": edge.replaces_id,
    }


def add_edges_and_aliases(entry: Entry, data: dict) -> None:
    """Entry detail: current edges both ways (direction seen from this entry) and aliases."""
    edges = []
    for edge in current_edges_of(entry):
        outgoing = edge.from_entry_id == entry.pk
        other = edge.to_entry if outgoing else edge.from_entry
        edges.append(
            {
                "edge_id": edge.pk,
                "relation": edge.type.name,
                "direction": "out" if outgoing else "in",
                "note": note_as_seen(edge.note, "out" if outgoing else "in"),
                "entry": {"id": other.short_id, "title": other.title, "summary": other.summary},
            }
        )
    data["edges"] = edges
    data["aliases"] = list(
        Alias.objects.filter(entry=entry).order_by("surface").values_list("surface", flat=True)
    )
