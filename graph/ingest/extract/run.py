"""Run an extractor over a bank's entries and queue the proposals that pass validation.

Incremental (``004_*`` 12.3): without an explicit list, a run reads the entries changed since
the previous run of the same extractor (the per-bank watermark of :class:`ExtractionState`)
plus those whose extraction failed last time. Each entry is one unit: its proposals are
queued together in one transaction, or — if the extractor fails on it — none are, and the
entry is kept for the next run. Nothing here writes an edge.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from graph.ingest.extract import get_extractor
from graph.ingest.extract.base import ExtractorError, RateLimited, Vocabulary
from graph.ingest.extract.mentions import MentionIndex
from graph.ingest.extract.validate import Validator
from graph.models import EdgeProposal, ExtractionState
from kb.errors import InvalidInput, NotFound
from kb.models import Bank, Entry, EntryStatus
from kb.services.entries import find_entry

Progress = Callable[[int, int], None]
MAX_EXPLICIT_ENTRIES = 5000


@dataclass
class ExtractionRun:
    """What one extraction run read and queued."""

    extractor: str
    incremental: bool = True
    entries: int = 0
    statements: int = 0  # what the extractor stated, before validation
    queued: int = 0
    unresolved: int = 0  # queued with at least one end left for a curator to name
    dropped: Counter = field(default_factory=Counter)
    failed: list[dict] = field(default_factory=list)
    left_for_next_run: int = 0
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)

    def as_json(self) -> dict:
        return {
            "extractor": self.extractor,
            "incremental": self.incremental,
            "entries": self.entries,
            "statements": self.statements,
            "queued": self.queued,
            "unresolved": self.unresolved,
            "dropped": dict(sorted(self.dropped.items())),
            "failed": self.failed,
            "left_for_next_run": self.left_for_next_run,
            "by_kind": self.by_kind,
        }

    def summary(self) -> str:
        dropped = sum(self.dropped.values())
        text = (
            f"{self.extractor}: read {self.entries} entries, {self.statements} statements; "
            f"queued {self.queued} proposals ({self.unresolved} with an unresolved end), "
            f"dropped {dropped}"
        )
        if self.failed:
            text += f"; {len(self.failed)} entries failed and wait for the next run"
        return text + "."


def explicit_entries(bank: Bank, refs: Iterable) -> list[Entry]:
    refs = list(refs)
    if len(refs) > MAX_EXPLICIT_ENTRIES:
        raise InvalidInput(
            f"At most {MAX_EXPLICIT_ENTRIES} entries per run.",
            code="invalid_input",
            fields={"entries": "Too many."},
        )
    entries, missing = {}, []
    for ref in refs:
        if not isinstance(ref, str) or not ref.strip():
            missing.append(repr(ref))
            continue
        try:
            entry = find_entry(bank, ref)
        except NotFound:
            missing.append(ref)
            continue
        entries[entry.pk] = entry
    if missing:
        raise InvalidInput(
            f"No such entries in this bank: {', '.join(missing[:10])}.",
            code="entry_not_found",
            fields={"entries": "Unknown entries."},
        )
    return list(entries.values())


def entries_to_read(bank: Bank, state: ExtractionState) -> list[Entry]:
    """Entries changed since the watermark, plus those left over by the previous run."""
    changed = Q(updated_at__gt=state.watermark) if state.watermark else Q()
    if state.pending:
        changed |= Q(pk__in=state.pending)
    return list(
        Entry.objects.filter(bank=bank)
        .filter(changed)
        .exclude(status__in=[EntryStatus.MERGED, EntryStatus.DELETED])
        .select_related("kind")
        .order_by("updated_at", "pk")
    )


def _queue(bank: Bank, entry: Entry, validator: Validator, statements, extractor: str, run):
    """Validate and queue one entry's statements in one transaction."""
    queued = unresolved = 0
    with transaction.atomic():
        validator.begin(entry)
        for st in statements:
            checked = validator.check(entry, st)
            if checked is None:
                continue
            try:
                with transaction.atomic():
                    EdgeProposal.objects.create(
                        bank=bank,
                        source_entry=entry,
                        span=checked.statement.span,
                        type=checked.type,
                        from_entry_id=checked.from_pk,
                        to_entry_id=checked.to_pk,
                        from_text=checked.statement.from_text.strip(),
                        to_text=checked.statement.to_text.strip(),
                        candidates=checked.candidates,
                        confidence=checked.confidence,
                        confidence_basis=checked.basis,
                        extractor=extractor,
                        fingerprint=checked.fingerprint,
                    )
            except IntegrityError:  # a concurrent run queued the same statement
                validator.dropped["already_proposed"] += 1
                continue
            queued += 1
            unresolved += checked.from_pk is None or checked.to_pk is None
    run.queued += queued
    run.unresolved += unresolved
    kind = run.by_kind.setdefault(entry.kind.name, {"entries": 0, "queued": 0})
    kind["entries"] += 1
    kind["queued"] += queued


def extract_edges(
    bank: Bank,
    *,
    entries: Iterable[str] | None = None,
    extractor: str = "local",
    progress: Progress | None = None,
    extractor_instance=None,
) -> ExtractionRun:
    """Read entries of ``bank`` with ``extractor`` and queue validated edge proposals.

    ``entries`` (ids or keys) reads exactly those; ``None`` reads what changed since the
    previous run of this extractor and moves the watermark. Never writes an edge."""
    index = MentionIndex(bank)
    impl = extractor_instance or get_extractor(extractor, index)
    run = ExtractionRun(extractor=extractor, incremental=entries is None)
    started = timezone.now()
    state, _ = ExtractionState.objects.get_or_create(bank=bank, extractor=extractor)
    todo = entries_to_read(bank, state) if entries is None else explicit_entries(bank, entries)
    vocabulary = Vocabulary.for_bank(bank)
    validator = Validator(bank, vocabulary, index)
    failed: list[int] = []
    total = len(todo)
    if progress:
        progress(0, total)
    for i, entry in enumerate(todo):
        try:
            statements = impl.extract(entry, vocabulary)
        except RateLimited as exc:
            run.failed.append({"entry": entry.short_id, "message": exc.message})
            failed.extend(e.pk for e in todo[i:])
            run.left_for_next_run = total - i
            break
        except ExtractorError as exc:
            run.failed.append({"entry": entry.short_id, "message": exc.message})
            failed.append(entry.pk)
            run.entries += 1
            continue
        run.entries += 1
        run.statements += len(statements)
        _queue(bank, entry, validator, statements, extractor, run)
        if progress:
            progress(i + 1, total)
    run.dropped = validator.dropped
    run.left_for_next_run = max(run.left_for_next_run, len(failed))
    done = {e.pk for e in todo} - set(failed)
    pending = [pk for pk in state.pending if pk not in done]
    pending += [pk for pk in failed if pk not in pending]
    fields = {"pending": pending, "last_run_at": started, "last_result": run.as_json()}
    if entries is None:
        fields["watermark"] = started
    ExtractionState.objects.filter(pk=state.pk).update(**fields)
    return run
