"""Merge two entries into one: one planning function (:func:`plan_merge`) that both the
preview (admin, before confirming) and :func:`merge_entries` use, so what a curator is shown
is what happens; the merge writes that plan set-wise (graph.curation.setwise_merge), in a
constant number of statements. Also the edge-preserving rule that delete shares."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from django.db.models import Q

from graph.curation.setwise_merge import apply_merge
from graph.edges.clocks import intervals_overlap
from graph.edges.links import _require_reason, lock_entries
from graph.models import Alias, Edge
from graph.resolution.aliases import normalize
from kb import audit
from kb.errors import Conflict, InvalidInput
from kb.models import Bank, Entry, EntryStatus, Operation, OperationKind
from kb.services.entries import find_entry
from kb.unit_of_work import unit_of_work

# --- the one rule of preserving writes --------------------------------------------------------


def uncovered_interval(lo, hi, believed: list[tuple]) -> tuple | None:
    """The part of the valid interval [lo, hi) (None = unbounded) not covered by the
    ``believed`` intervals of the same triple, trimmed from the ends; None when nothing is
    left. (Bank edges are sparse in time: one contiguous remainder is what matters.)"""
    for _ in range(len(believed) + 1):
        clash = next(((f, t) for f, t in believed if intervals_overlap(lo, hi, f, t)), None)
        if clash is None:
            return lo, hi
        c_from, c_to = clash
        if c_to is not None and (hi is None or c_to < hi) and (lo is None or lo < c_to):
            lo = c_to  # covered up to the clash's end: start there
        elif c_from is not None and (lo is None or c_from > lo):
            hi = c_from  # the clash starts later: end where it starts
        else:
            return None
        if lo is not None and hi is not None and lo >= hi:
            return None
    return None


class BelievedTriples:
    """The believed edges of the triples a plan may write, plus the plan's own successors:
    decides, read-only, whether a new (from, to, type, interval) collapses into one of them
    or is written for the valid time not yet covered (the rule merge and delete share)."""

    def __init__(self, edges):
        self.rows: dict[tuple, list[Edge]] = {}
        for edge in edges:
            self.add(edge)

    def add(self, edge: Edge) -> None:
        self.rows.setdefault((edge.from_entry_id, edge.to_entry_id, edge.type_id), []).append(edge)

    def place(self, from_id: int, to_id: int, type_id: int, valid_from, valid_to):
        """(None, the edge it collapses into) or ((from, to) interval to write, None)."""
        same = self.rows.get((from_id, to_id, type_id), [])
        current = next((e for e in same if e.is_current()), None)
        remainder = uncovered_interval(
            valid_from, valid_to, [(e.valid_from, e.valid_to) for e in same]
        )
        if current is not None or remainder is None:
            clash = current or next(
                (
                    e
                    for e in same
                    if intervals_overlap(e.valid_from, e.valid_to, valid_from, valid_to)
                ),
                same[0] if same else None,
            )
            return None, clash
        return remainder, None


# --- merge ------------------------------------------------------------------------------------


@dataclass
class EdgeFate:
    """What a merge does to one believed edge of ``away``."""

    edge: Edge
    fate: str  # repointed | collapses | self_loop
    new_from: Entry
    new_to: Entry
    into: Edge | None = None  # the believed edge a collapsing one folds into
    valid_from: object = None  # the re-pointed row's valid interval (trimmed if need be)
    valid_to: object = None
    # repointed: the plan's stand-in for the row that replaces it (a later edge of away may
    # collapse into it: then ``into`` is this very object)
    successor: Edge | None = None


@dataclass
class MergePlan:
    """Exactly what :func:`merge_entries` does, computed read-only by :func:`plan_merge`."""

    keep: Entry
    away: Entry
    edges: list[EdgeFate] = field(default_factory=list)
    aliases_moved: list[Alias] = field(default_factory=list)
    aliases_new: list[str] = field(default_factory=list)
    # Forms that both entries name: the merged entry is their one answer, away's row goes.
    aliases_dropped: list[Alias] = field(default_factory=list)

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


def plan_merge(keep: Entry, away: Entry, *, lock: bool = False) -> MergePlan:
    """What merging ``away`` into ``keep`` does, writing nothing: each believed edge of
    ``away``, in id order, is dropped as a self-loop (its other end is ``keep``), collapses
    into a believed edge of the same (from, to, type) with overlapping valid time (one already
    there or one re-pointed earlier in the same merge), or is re-pointed (its valid time
    trimmed to what is not yet covered); ``away``'s aliases move to ``keep`` and its short_id,
    key and title become aliases unless that form is taken. ``lock`` row-locks ``away``'s
    edges and aliases (inside :func:`merge_entries`)."""
    bank_id = keep.bank_id
    plan = MergePlan(keep, away)
    away_edges = (
        Edge.objects.filter(bank_id=bank_id, invalidated_at__isnull=True)
        .filter(Q(from_entry=away) | Q(to_entry=away))
        .select_related("type", "from_entry", "to_entry")
        .order_by("id")
    )
    if lock:
        away_edges = away_edges.select_for_update(of=("self",))
    away_edges = list(away_edges)
    # Every re-pointed edge has keep at one end, so only keep's believed edges can clash.
    believed = BelievedTriples(
        Edge.objects.filter(bank_id=bank_id, invalidated_at__isnull=True)
        .filter(Q(from_entry=keep) | Q(to_entry=keep))
        .exclude(pk__in=[e.pk for e in away_edges])
        .select_related("type", "from_entry", "to_entry")
        .order_by("id")
    )
    for edge in away_edges:
        new_from = keep if edge.from_entry_id == away.pk else edge.from_entry
        new_to = keep if edge.to_entry_id == away.pk else edge.to_entry
        if new_from.pk == new_to.pk:
            plan.edges.append(EdgeFate(edge, "self_loop", new_from, new_to))
            continue
        interval, into = believed.place(
            new_from.pk, new_to.pk, edge.type_id, edge.valid_from, edge.valid_to
        )
        if interval is None:
            plan.edges.append(EdgeFate(edge, "collapses", new_from, new_to, into))
            continue
        successor = copy.copy(edge)
        successor.from_entry_id, successor.to_entry_id = new_from.pk, new_to.pk
        successor.valid_from, successor.valid_to = interval
        plan.edges.append(
            EdgeFate(edge, "repointed", new_from, new_to, None, *interval, successor=successor)
        )
        believed.add(successor)

    aliases = Alias.objects.filter(bank_id=bank_id, entry=away).order_by("pk")
    taken = set(
        Alias.objects.filter(bank_id=bank_id, entry=keep).values_list("normalized", flat=True)
    )
    for alias in aliases.select_for_update(of=("self",)) if lock else aliases:
        if alias.normalized in taken:
            plan.aliases_dropped.append(alias)
        else:
            plan.aliases_moved.append(alias)
            taken.add(alias.normalized)
    surfaces = [s for s in (away.short_id, away.key, away.title) if s]
    forms_of = {s: normalize(s) for s in surfaces}
    for surface in surfaces:
        norm = forms_of[surface]
        if norm and norm not in taken:
            plan.aliases_new.append(surface)
            taken.add(norm)
    return plan


@dataclass
class MergeResult:
    operation: Operation
    keep: Entry
    away: Entry
    edges_repointed: int
    edges_collapsed: int
    aliases_added: int
    self_loops_dropped: list[int]
    collapsed: list[dict] = field(default_factory=list)  # each collapsed edge, both notes

    def as_json(self) -> dict:
        return {
            "operation": self.operation.pk,
            "keep": self.keep.short_id,
            "away": self.away.short_id,
            "edges_repointed": self.edges_repointed,
            "edges_collapsed": self.edges_collapsed,
            "aliases_added": self.aliases_added,
            "self_loops_dropped": self.self_loops_dropped,
            "collapsed_edges": self.collapsed,
        }


def _mergeable(bank: Bank, ref: str, field: str) -> Entry:
    if not isinstance(ref, str) or not ref.strip():
        raise InvalidInput(
            f"{field} must be an entry id.", code="invalid_merge", fields={field: "Required."}
        )
    entry = find_entry(bank, ref, follow_merges=False)
    if entry.status == EntryStatus.MERGED:
        raise Conflict(
            f"Entry {ref!r} was already merged into another entry.", code="already_merged"
        )
    return entry


def merge_pair(bank: Bank, keep_ref: str, away_ref: str) -> tuple[Entry, Entry]:
    """The two entries a merge names, checked (live-ish, distinct): shared by the preview."""
    keep = _mergeable(bank, keep_ref, "keep")
    away = _mergeable(bank, away_ref, "away")
    if keep.pk == away.pk:
        raise InvalidInput(
            "keep and away are the same entry.",
            code="invalid_merge",
            fields={"away": "Same as keep."},
        )
    for entry in (keep, away):
        if entry.status == EntryStatus.DELETED:
            raise Conflict(f"Entry {entry.short_id} is deleted.", code="already_deleted")
    return keep, away


def merge_entries(
    bank: Bank, keep_ref: str, away_ref: str, reason: str, *, actor: str | None = None
) -> MergeResult:
    """Merge ``away`` into ``keep`` as :func:`plan_merge` says: re-point every believed edge
    of ``away`` (duplicates collapse; would-be self-loops are recorded and dropped), turn its
    id, key and aliases into aliases of ``keep``, mark it merged. One ``merge`` operation,
    exactly revertible."""
    reason = _require_reason(reason)
    keep, away = merge_pair(bank, keep_ref, away_ref)
    with unit_of_work(bank, OperationKind.MERGE, reason=reason, actor=actor) as op:
        lock_entries([keep.pk, away.pk], exclusive=True)
        keep = Entry.objects.select_related("kind").get(pk=keep.pk)
        away = Entry.objects.select_related("kind").get(pk=away.pk)
        for entry in (keep, away):  # re-check now that nobody else can change them
            if entry.status in (EntryStatus.MERGED, EntryStatus.DELETED):
                raise Conflict(
                    f"Entry {entry.short_id} was {entry.status} meanwhile.",
                    code=f"already_{entry.status}",
                )
        plan = plan_merge(keep, away, lock=True)
        written = apply_merge(bank, plan, op)
        result = MergeResult(
            op,
            keep,
            away,
            written.repointed,
            len(written.collapsed),
            written.aliases_added,
            written.self_loops,
            written.collapsed,
        )
        audit.record(op, **{k: v for k, v in result.as_json().items() if k != "operation"})
    return result
