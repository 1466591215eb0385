"""Lifecycle (``002_*``): retire with verbatim evidence (optionally superseded by a newer
entry), restore a retirement. Retired entries stay findable (×0.35) and visible as retired."""

from __future__ import annotations

from django.utils import timezone

from graph.edges.links import _entry, clean_link, current_q, write_edge
from graph.edges.notes import supersede_note
from graph.models import Edge
from kb import audit
from kb.errors import Conflict, InvalidInput
from kb.models import Bank, Entry, EntryStatus, OperationKind
from kb.services.entries import find_entry
from kb.unit_of_work import unit_of_work


def _subject(bank: Bank, ref) -> Entry:
    """The entry a lifecycle call is about: an Entry (admin) or the id of the URL, which answers
    404 ``entry_not_found`` when it names no entry of the bank (blank included), as GET does."""
    if isinstance(ref, Entry):
        return _entry(bank, ref, "id")
    return find_entry(bank, str(ref))


def _required_text(value, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(
            f"{field} is required.", code=f"{field}_required", fields={field: "Required."}
        )
    return value.strip()


def retire_entry(
    bank: Bank, ref, reason, evidence, *, superseded_by=None, actor: str | None = None
) -> Entry:
    """Retire an entry. ``reason`` says why; ``evidence`` is the verbatim text showing the old
    state actually ended. ``superseded_by`` also writes ``superseded_by -supersedes-> entry``."""
    reason = _required_text(reason, "reason")
    evidence = _required_text(evidence, "evidence")
    entry = _subject(bank, ref)
    replacement = _entry(bank, superseded_by, "superseded_by") if superseded_by else None
    with unit_of_work(
        bank, OperationKind.RETIRE, reason=reason, actor=actor, entry=entry.short_id
    ) as op:
        entry = (
            Entry.objects.select_for_update(of=("self",)).select_related("kind").get(pk=entry.pk)
        )
        if entry.status != EntryStatus.LIVE:
            raise Conflict(
                f"Entry {entry.short_id} is {entry.status}, not live; only a live entry retires.",
                code="not_live",
            )
        entry.status = EntryStatus.RETIRED
        entry.retired_reason = reason
        entry.retired_evidence = evidence
        entry.status_changed_at = timezone.now()
        entry.save()
        if replacement is not None:
            exists = (
                Edge.objects.filter(
                    bank=bank, from_entry=replacement, to_entry=entry, type__name="supersedes"
                )
                .filter(current_q())
                .exists()
            )
            if not exists:
                req = clean_link(
                    bank,
                    {
                        "from": replacement,
                        "to": entry,
                        "relation": "supersedes",
                        "note": supersede_note(replacement.short_id, entry.short_id),
                    },
                )
                edge = write_edge(bank, req)
                audit.record(op, edges=[edge.pk])
    return entry


def restore_entry(bank: Bank, ref, *, reason: str = "", actor: str | None = None) -> Entry:
    """Undo a retirement (the supersedes edge, if any, stays: unlink it separately)."""
    entry = _subject(bank, ref)
    with unit_of_work(
        bank, OperationKind.RESTORE, reason=reason or "restored", actor=actor, entry=entry.short_id
    ):
        entry = (
            Entry.objects.select_for_update(of=("self",)).select_related("kind").get(pk=entry.pk)
        )
        if entry.status != EntryStatus.RETIRED:
            raise Conflict(f"Entry {entry.short_id} is not retired.", code="not_retired")
        entry.status = EntryStatus.LIVE
        entry.retired_reason = ""
        entry.retired_evidence = ""
        entry.status_changed_at = timezone.now()
        entry.save()
    return entry
