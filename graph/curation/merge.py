"""Merge two entries into one, and the edge-preserving write that merge and delete share."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q
from django.utils import timezone

from graph.edges.clocks import intervals_overlap
from graph.edges.links import (
    LinkRequest,
    _require_reason,
    close_edge,
    lock_entries,
    write_edge,
)
from graph.models import Alias, Edge
from graph.resolution.aliases import normalize
from kb import audit
from kb.errors import Conflict, InvalidInput
from kb.models import Bank, Entry, EntryStatus, Operation, OperationKind
from kb.services.entries import find_entry

# --- merge ----------------------------------------------------------------------------------


def uncovered_interval(lo, hi, believed: list[tuple]) -> tuple | None:
    """The part of the valid interval [lo, hi) (None = unbounded) not covered by the
    ``believed`` intervals of the same triple, trimmed from the ends; None when nothing is
    left. (Bank edges are sparse in time: one contiguous remainder is what matters.)"""
    for _ in range(len(believed) + 1):
        clash = next(
            ((f, t) for f, t in believed if intervals_overlap(lo, hi, f, t)),
            None,
        )
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


def write_preserving(bank: Bank, req: LinkRequest, *, replaces: Edge | None = None) -> Edge | None:
    """Write ``req`` unless the same triple is already current (then None: it collapses into
    that edge). When the triple is believed only for another valid interval (an edge that
    ended, or starts later), the new row is trimmed to the time not yet covered, so the
    connection survives without two overlapping beliefs."""
    believed = list(
        Edge.objects.filter(
            from_entry=req.from_entry,
            to_entry=req.to_entry,
            type=req.type,
            invalidated_at__isnull=True,
        )
    )
    if any(e.is_current() for e in believed):
        return None
    interval = uncovered_interval(
        req.valid_from, req.valid_to, [(e.valid_from, e.valid_to) for e in believed]
    )
    if interval is None:
        return None
    req.valid_from, req.valid_to = interval
    return write_edge(bank, req, replaces=replaces)


@dataclass
class MergeResult:
    operation: Operation
    keep: Entry
    away: Entry
    edges_repointed: int
    edges_collapsed: int
    aliases_added: int
    self_loops_dropped: list[int]

    def as_json(self) -> dict:
        return {
            "operation": self.operation.pk,
            "keep": self.keep.short_id,
            "away": self.away.short_id,
            "edges_repointed": self.edges_repointed,
            "edges_collapsed": self.edges_collapsed,
            "aliases_added": self.aliases_added,
            "self_loops_dropped": self.self_loops_dropped,
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


def merge_entries(
    bank: Bank, keep_ref: str, away_ref: str, reason: str, *, actor: str | None = None
) -> MergeResult:
    """Merge ``away`` into ``keep``: re-point every believed edge of ``away`` (duplicates
    collapse; would-be self-loops are recorded and dropped), turn its id, key and aliases into
    aliases of ``keep``, mark it merged. One ``merge`` operation, exactly revertible."""
    reason = _require_reason(reason)
    keep = _mergeable(bank, keep_ref, "keep")
    away = _mergeable(bank, away_ref, "away")
    if keep.pk == away.pk:
        raise InvalidInput(
            "keep and away are the same entry.",
            code="invalid_merge",
            fields={"away": "Same as keep."},
        )
    with audit.operation(bank, OperationKind.MERGE, reason=reason, actor=actor) as op:
        lock_entries([keep.pk, away.pk], exclusive=True)
        keep = Entry.objects.select_related("kind").get(pk=keep.pk)
        away = Entry.objects.select_related("kind").get(pk=away.pk)
        for entry in (keep, away):  # re-check now that nobody else can change them
            if entry.status in (EntryStatus.MERGED, EntryStatus.DELETED):
                raise Conflict(
                    f"Entry {entry.short_id} was {entry.status} meanwhile.",
                    code=f"already_{entry.status}",
                )
        repointed = collapsed = 0
        self_loops: list[int] = []
        edges = (
            Edge.objects.select_for_update(of=("self",))
            .filter(bank=bank, invalidated_at__isnull=True)
            .filter(Q(from_entry=away) | Q(to_entry=away))
            .select_related("type", "from_entry", "to_entry")
            .order_by("id")
        )
        for edge in edges:
            new_from = keep if edge.from_entry_id == away.pk else edge.from_entry
            new_to = keep if edge.to_entry_id == away.pk else edge.to_entry
            if new_from.pk == new_to.pk:
                close_edge(
                    edge, f"merge of {away.short_id} into {keep.short_id}: would be a self-loop"
                )
                self_loops.append(edge.pk)
                continue
            req = LinkRequest(
                new_from,
                new_to,
                edge.type,
                edge.note,
                {**(edge.evidence or {}), "merged_from": away.short_id},
                edge.label,
                edge.valid_from,
                edge.valid_to,
                edge.source,
            )
            close_edge(edge, f"merge of {away.short_id} into {keep.short_id}")
            if write_preserving(bank, req, replaces=edge) is None:
                collapsed += 1  # keep already has this edge: the duplicate collapses into it
            else:
                repointed += 1
        aliases_added = 0
        kept_forms = set(
            Alias.objects.filter(bank=bank, entry=keep).values_list("normalized", flat=True)
        )
        for alias in Alias.objects.select_for_update(of=("self",)).filter(bank=bank, entry=away):
            if alias.normalized in kept_forms:
                alias.delete()  # both named the form: the merged entry is its one answer now
                continue
            alias.entry = keep
            alias.save()
            kept_forms.add(alias.normalized)
            aliases_added += 1
        for surface in filter(None, [away.short_id, away.key, away.title]):
            norm = normalize(surface)
            if norm and norm not in kept_forms:
                kept_forms.add(norm)
                Alias.objects.create(
                    bank=bank,
                    entry=keep,
                    surface=surface,
                    normalized=norm,
                    source="merge",
                    actor=op.actor,
                )
                aliases_added += 1
        away.status = EntryStatus.MERGED
        away.merged_into = keep
        away.status_changed_at = timezone.now()
        away.save()
        result = MergeResult(op, keep, away, repointed, collapsed, aliases_added, self_loops)
        audit.record(op, **{k: v for k, v in result.as_json().items() if k != "operation"})
    return result
