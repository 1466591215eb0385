"""JSON shapes of the graph API (edges, an entry's edges and aliases)."""

from __future__ import annotations

from graph.edges.links import current_edges_of
from graph.edges.notes import note_as_seen, note_ends
from graph.models import Alias, Edge
from kb.api.render import entry_detail, iso
from kb.models import Entry


def edge_json(edge: Edge) -> dict:
    """One edge as the API shows it: ``note`` is read from the ``from`` end, ``note_in`` from
    the ``to`` end (they differ only for the system's two-ended notes, graph/edges/notes.py)."""
    from_end, to_end = note_ends(edge.note)
    return {
        "id": edge.pk,
        "from": edge.from_entry.short_id,
        "to": edge.to_entry.short_id,
        "relation": edge.type.name,
        "label": edge.label or None,
        "note": from_end,
        "note_in": to_end,
        "evidence": edge.evidence,
        "source": edge.source,
        "actor": edge.actor,
        "valid_from": iso(edge.valid_from),
        "valid_to": iso(edge.valid_to),
        "recorded_at": iso(edge.recorded_at),
        "invalidated_at": iso(edge.invalidated_at),
        "replaces": edge.replaces_id,
    }


def entry_with_graph(entry: Entry, merged_from: str | None = None) -> dict:
    """An entry as API.md shows it: kb's fields plus its edges, aliases and correction marks."""
    data = entry_detail(entry, merged_from=merged_from)
    add_edges_and_aliases(entry, data)
    return data


def add_edges_and_aliases(entry: Entry, data: dict, new_edges: list[Edge] | None = None) -> None:
    """Entry detail: current edges both ways (direction seen from this entry) and aliases.

    ``new_edges``: the entry was created by this write and these are the edges it wrote (its
    connections, ends loaded): an entry no other transaction has seen has no other edges, no
    aliases and no removed corrections, so nothing is read."""
    if new_edges is None:
        rows = list(current_edges_of(entry))
    else:
        rows = sorted((e for e in new_edges if e.is_current()), key=lambda e: e.pk)
    edges = []
    for edge in rows:
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
    add_correction_marks(entry, edges, data, removed=new_edges is None)
    data["aliases"] = (
        list(
            Alias.objects.filter(entry=entry).order_by("surface").values_list("surface", flat=True)
        )
        if new_edges is None
        else []
    )


CORRECTION_MARKS = {"corrects": "corrected_by", "supersedes": "superseded_by"}


def add_correction_marks(entry: Entry, edges: list[dict], data: dict, removed: bool = True) -> None:
    """``corrected_by``/``superseded_by``: the current corrector (the lowest edge id when
    several); ``correction_removed``: corrections whose corrector was deleted with no entry
    taking them over (see :func:`graph.curation.delete.plan_delete`), so a reader knows the
    entry was once corrected rather than seeing nothing (not read when ``removed`` is False:
    a new entry has none)."""
    for relation, name in CORRECTION_MARKS.items():
        data[name] = next(
            (
                e["entry"]["id"]
                for e in edges
                if e["relation"] == relation and e["direction"] == "in"
            ),
            None,
        )
    data["correction_removed"] = []
    if not removed:
        return
    removed_edges = (
        Edge.objects.filter(
            bank_id=entry.bank_id,
            to_entry=entry,
            type__name__in=list(CORRECTION_MARKS),
            invalidated_at__isnull=False,
            from_entry__status="deleted",
        )
        .select_related("type", "from_entry")
        .order_by("id")
    )
    seen = set()
    for edge in removed_edges:
        key = (edge.from_entry_id, edge.type.name)
        if data[CORRECTION_MARKS[edge.type.name]] is not None or key in seen:
            continue  # still corrected (by the replacement, or by another entry)
        seen.add(key)
        data["correction_removed"].append(
            {
                "by": edge.from_entry.short_id,
                "title": edge.from_entry.title,
                "relation": edge.type.name,
                "removed_at": iso(edge.invalidated_at),
            }
        )
