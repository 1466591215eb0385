"""Merge B into A in a constant number of statements, whatever the number of B's edges.

The rules are those of ``merge_entries`` (graph.curation.merge): every believed edge of
``away``, in id order, is dropped as a would-be self-loop, collapses into a believed edge of
the same (from, to, type) that is current or already covers its valid time, or is re-pointed
(trimmed to the valid time not yet covered). :func:`plan_merge` decides each edge's fate in
Python over two reads; :func:`apply_merge` writes them with set-wise statements and history
rows stamped with the operation. A collapsed edge's note is not lost: it is reported with the
note of the edge it collapsed into and kept in that edge's evidence (``merged_notes``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db.models import Q
from django.utils import timezone

from graph.curation.edge_rows import (
    add_missing_aliases,
    append_edges,
    close_edges,
    move_aliases,
    set_evidence,
)
from graph.edges.links import lock_entries
from graph.models import Edge
from graph.resolution.aliases import normalize
from kb.errors import Conflict
from kb.models import Bank, Entry, EntryStatus


def _covers(lo, hi, at: dt.datetime) -> bool:
    return (lo is None or lo <= at) and (hi is None or at < hi)


def _overlaps(a_lo, a_hi, b_lo, b_hi) -> bool:
    return (a_hi is None or b_lo is None or b_lo < a_hi) and (
        b_hi is None or a_lo is None or a_lo < b_hi
    )


@dataclass
class EdgeFate:
    """What a merge does with one believed edge of ``away``."""

    edge: Edge
    fate: str  # "self_loop", "collapses" or "repointed"
    new_from: int
    new_to: int
    survivor: Edge | None = None  # collapses: the edge it collapses into (maybe a new one)
    successor: Edge | None = None  # repointed: the unsaved row that replaces it


@dataclass
class MergePlan:
    fates: list[EdgeFate] = field(default_factory=list)

    def of(self, fate: str) -> list[EdgeFate]:
        return [f for f in self.fates if f.fate == fate]


def plan_merge(
    keep: Entry,
    away: Entry,
    away_edges: list[Edge],
    keep_edges: list[Edge],
    *,
    now: dt.datetime,
    actor: str,
) -> MergePlan:
    """Each of ``away_edges``' fate (in id order); writes nothing. ``keep_edges`` are keep's
    believed edges: every re-pointed edge has keep at one end, so only they can clash."""
    from graph.curation.merge import uncovered_interval

    away_ids = {e.pk for e in away_edges}
    believed: dict[tuple, list[Edge]] = {}
    for e in keep_edges:
        if e.pk not in away_ids:
            believed.setdefault((e.from_entry_id, e.to_entry_id, e.type_id), []).append(e)
    plan = MergePlan()
    for edge in sorted(away_edges, key=lambda e: e.pk):
        new_from = keep.pk if edge.from_entry_id == away.pk else edge.from_entry_id
        new_to = keep.pk if edge.to_entry_id == away.pk else edge.to_entry_id
        if new_from == new_to:
            plan.fates.append(EdgeFate(edge, "self_loop", new_from, new_to))
            continue
        same = believed.setdefault((new_from, new_to, edge.type_id), [])
        current = next((o for o in same if _covers(o.valid_from, o.valid_to, now)), None)
        remainder = uncovered_interval(
            edge.valid_from, edge.valid_to, [(o.valid_from, o.valid_to) for o in same]
        )
        if current is not None or remainder is None:
            clash = current or next(
                (
                    o
                    for o in same
                    if _overlaps(o.valid_from, o.valid_to, edge.valid_from, edge.valid_to)
                ),
                same[0] if same else None,
            )
            plan.fates.append(EdgeFate(edge, "collapses", new_from, new_to, survivor=clash))
            continue
        successor = Edge(
            bank_id=edge.bank_id,
            from_entry_id=new_from,
            to_entry_id=new_to,
            type_id=edge.type_id,
            label=edge.label,
            note=edge.note,
            evidence={**(edge.evidence or {}), "merged_from": away.short_id},
            source=edge.source,
            actor=actor,
            valid_from=remainder[0],
            valid_to=remainder[1],
            recorded_at=now,
            replaces_id=edge.pk,
        )
        same.append(successor)
        plan.fates.append(EdgeFate(edge, "repointed", new_from, new_to, successor=successor))
    return plan


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


def apply_merge(bank: Bank, keep: Entry, away: Entry, op) -> MergeWrite:
    """Do the merge of ``away`` into ``keep`` inside the open operation ``op``; the caller has
    locked both entries exclusively and checked they are neither merged nor deleted."""
    now = timezone.now()
    where = Q(from_entry_id=away.pk) | Q(to_entry_id=away.pk)
    away_edges = list(
        Edge.objects.select_for_update(of=("self",))
        .filter(bank=bank, invalidated_at__isnull=True)
        .filter(where)
        .select_related("type")
        .order_by("id")
    )
    keep_edges = list(
        Edge.objects.select_for_update(of=("self",))
        .filter(bank=bank, invalidated_at__isnull=True)
        .filter(Q(from_entry_id=keep.pk) | Q(to_entry_id=keep.pk))
        .exclude(where)
        .order_by("id")
    )
    plan = plan_merge(keep, away, away_edges, keep_edges, now=now, actor=op.actor)
    repointed = plan.of("repointed")
    # The other ends of re-pointed edges must still be linkable (a link shares the lock).
    ends = {f.new_from for f in repointed} | {f.new_to for f in repointed}
    ends -= {keep.pk}
    states = lock_entries(ends) if ends else {}
    others = {
        pk: (sid, status)
        for pk, sid, status in Entry.objects.filter(
            pk__in={
                e.to_entry_id if e.from_entry_id == away.pk else e.from_entry_id for e in away_edges
            }
        ).values_list("pk", "short_id", "status")
    }
    for pk in ends:
        status = states.get(pk, ("deleted", None))[0]
        if status in (EntryStatus.MERGED, EntryStatus.DELETED):
            sid = others.get(pk, ("?", ""))[0]
            raise Conflict(
                f"Entry {sid} was {status} meanwhile; merge again.", code=f"entry_{status}"
            )
    label = f"merge of {away.short_id} into {keep.short_id}"
    close_edges(
        {
            f.edge.pk: label + (": would be a self-loop" if f.fate == "self_loop" else "")
            for f in plan.fates
        },
        when=now,
    )
    # Collapsed notes: on a successor written now, into its evidence before the insert; on an
    # edge keep already had, as one evidence update.
    evidence_updates: dict[int, dict] = {}
    collapsed = []
    for f in plan.of("collapses"):
        survivor = f.survivor
        if f.edge.note and f.edge.note != survivor.note:
            if survivor.pk is None:
                survivor.evidence = _kept_note(survivor.evidence, away, f.edge)
            else:
                base = evidence_updates.get(survivor.pk, survivor.evidence)
                evidence_updates[survivor.pk] = _kept_note(base, away, f.edge)
        collapsed.append((f, survivor))
    created = append_edges([f.successor for f in repointed], when=now)
    set_evidence(evidence_updates, when=now)
    report = []
    for f, survivor in collapsed:
        other = f.new_to if f.new_from == keep.pk else f.new_from
        report.append(
            {
                "edge": f.edge.pk,
                "into": survivor.pk,
                "relation": f.edge.type.name,
                "direction": "out" if f.new_from == keep.pk else "in",
                "other": others.get(other, (None, ""))[0],
                "note_kept": survivor.note,
                "note_away": f.edge.note,
                "away_note_kept_as_evidence": bool(f.edge.note and f.edge.note != survivor.note),
            }
        )
    moved = move_aliases(bank.pk, away.pk, keep.pk, when=now)
    forms = [(s, normalize(s)) for s in (away.short_id, away.key, away.title) if s]
    added = add_missing_aliases(bank.pk, keep.pk, forms, source="merge", actor=op.actor, when=now)
    away.status = EntryStatus.MERGED
    away.merged_into = keep
    away.status_changed_at = now
    away.save()
    return MergeWrite(
        repointed=len(created),
        collapsed=report,
        self_loops=[f.edge.pk for f in plan.of("self_loop")],
        aliases_added=len(moved) + len(added),
    )
