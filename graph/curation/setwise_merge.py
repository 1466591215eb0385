"""Write a merge of B into A in a constant number of statements, whatever the number of B's
edges.

What is written is :func:`graph.curation.merge.plan_merge`'s plan (the plan the admin preview
shows), computed with B's edges and aliases locked: closes, re-pointed successors, collapsed
notes, alias moves, drops and additions each go in one set-wise statement with history rows
stamped with the operation. A collapsed edge's note is not lost: it is reported with the note
of the edge it collapsed into and kept in that edge's evidence (``merged_notes``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from graph.curation.edge_rows import (
    add_aliases,
    append_edges,
    close_edges,
    move_aliases,
    set_evidence,
)
from graph.edges.links import lock_entries
from graph.edges.notes import note_after_merge
from graph.models import Alias, Edge
from graph.resolution.aliases import normalize
from kb.errors import Conflict
from kb.models import Bank, Entry, EntryStatus


def _kept_note(evidence: dict | None, away: Entry, edge: Edge) -> dict:
    """``evidence`` with the collapsed edge's note appended to ``merged_notes``."""
    evidence = dict(evidence or {})
    notes = list(evidence.get("merged_notes") or [])
    notes.append(
        {"from": away.short_id, "edge": edge.pk, "relation": edge.type.name, "note": edge.note}
    )
    evidence["merged_notes"] = notes
    return evidence


@dataclass
class MergeWrite:
    repointed: int
    collapsed: list[dict]
    self_loops: list[int]
    aliases_added: int


def apply_merge(bank: Bank, plan, op) -> MergeWrite:
    """Write ``plan`` (a :class:`graph.curation.merge.MergePlan`) inside the open operation
    ``op``; the caller has locked both entries exclusively, checked they are neither merged
    nor deleted, and planned with ``lock=True``."""
    from graph.curation.setwise_revert import delete_rows

    keep, away = plan.keep, plan.away
    now = timezone.now()
    _check_other_ends(plan)
    label = f"merge of {away.short_id} into {keep.short_id}"
    close_edges(
        {
            f.edge.pk: label + (": would be a self-loop" if f.fate == "self_loop" else "")
            for f in plan.edges
        },
        when=now,
    )
    successors = _successors(plan, op, now)
    collapsed, evidence_updates = _collapse_notes(plan, successors)
    created = append_edges(list(successors.values()), when=now)
    set_evidence(evidence_updates, when=now)
    # Away's aliases for forms keep already has go (the merged entry is their one answer);
    # the rest move; away's id, key and title become aliases where keep lacks the form.
    delete_rows(Alias, sorted(a.pk for a in plan.aliases_dropped), when=now)
    moved = move_aliases([a.pk for a in plan.aliases_moved], keep.pk, when=now)
    added = add_aliases(
        bank.pk,
        keep.pk,
        [(s, normalize(s)) for s in plan.aliases_new],
        source="merge",
        actor=op.actor,
        when=now,
    )
    away.status = EntryStatus.MERGED
    away.merged_into = keep
    away.status_changed_at = now
    away.save()
    return MergeWrite(
        repointed=len(created),
        collapsed=[_collapsed_report(keep, f, survivor) for f, survivor in collapsed],
        self_loops=[f.edge.pk for f in plan.self_loops],
        aliases_added=len(moved) + len(added),
    )


def _check_other_ends(plan) -> None:
    """Lock the other ends of re-pointed edges (a link shares the lock): each must still be
    linkable, neither merged nor deleted meanwhile."""
    repointed = plan.repointed
    ends = {f.new_from.pk for f in repointed} | {f.new_to.pk for f in repointed}
    ends -= {plan.keep.pk}
    states = lock_entries(ends) if ends else {}
    others = {}
    for f in plan.edges:
        for end in (f.edge.from_entry, f.edge.to_entry):
            others[end.pk] = end.short_id
    for pk in ends:
        status = states.get(pk, ("deleted", None))[0]
        if status in (EntryStatus.MERGED, EntryStatus.DELETED):
            raise Conflict(
                f"Entry {others.get(pk, '?')} was {status} meanwhile; merge again.",
                code=f"entry_{status}",
            )


def _successors(plan, op, now) -> dict[int, Edge]:
    """The unsaved rows that replace re-pointed edges, by ``id`` of their planned successor (a
    later edge of away may collapse into one)."""
    away, keep = plan.away, plan.keep
    successors: dict[int, Edge] = {}
    for f in plan.repointed:
        edge = f.edge
        successors[id(f.successor)] = Edge(
            bank_id=edge.bank_id,
            from_entry_id=f.new_from.pk,
            to_entry_id=f.new_to.pk,
            type_id=edge.type_id,
            label=edge.label,
            note=note_after_merge(edge.note, away.short_id, keep.short_id),
            evidence={**(edge.evidence or {}), "merged_from": away.short_id},
            source=edge.source,
            actor=op.actor,
            valid_from=f.valid_from,
            valid_to=f.valid_to,
            recorded_at=now,
            replaces_id=edge.pk,
        )
    return successors


def _collapse_notes(plan, successors: dict[int, Edge]) -> tuple[list[tuple], dict[int, dict]]:
    """Each collapsed edge with the edge it collapsed into; a collapsed note that says
    something else is kept in the survivor's evidence: on a successor written now, before the
    insert; on an edge keep already had, as one evidence update (returned by edge id)."""
    evidence_updates: dict[int, dict] = {}
    collapsed = []
    for f in plan.collapsed:
        survivor = successors.get(id(f.into), f.into)
        if f.edge.note and f.edge.note != survivor.note:
            if survivor.pk is None:
                survivor.evidence = _kept_note(survivor.evidence, plan.away, f.edge)
            else:
                base = evidence_updates.get(survivor.pk, survivor.evidence)
                evidence_updates[survivor.pk] = _kept_note(base, plan.away, f.edge)
        collapsed.append((f, survivor))
    return collapsed, evidence_updates


def _collapsed_report(keep, f, survivor: Edge) -> dict:
    """The merge report's line for an edge of away that collapsed into ``survivor`` (its pk
    is known once the successors are written)."""
    other = f.new_to if f.new_from.pk == keep.pk else f.new_from
    return {
        "edge": f.edge.pk,
        "into": survivor.pk,
        "relation": f.edge.type.name,
        "direction": "out" if f.new_from.pk == keep.pk else "in",
        "other": other.short_id,
        "note_kept": survivor.note,
        "note_away": f.edge.note,
        "away_note_kept_as_evidence": bool(f.edge.note and f.edge.note != survivor.note),
    }
