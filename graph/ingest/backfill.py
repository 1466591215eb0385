"""Backfills: turn links the corpus already states into typed, audited edges.

Three sources, each written as at most one ``backfill`` operation per run:

- **Citations** (``000_*``): an entry whose text names another entry's 8-character id gets a
  ``cites`` edge to it, the citing sentence as its note.
- **Metadata**: typed links left in ``metadata`` by dedup (``supersedes``, ``replaces``,
  ``split_from``, ``derived_from``, ``recovered_from``) become typed edges.
- **Headers** (``001_*``): a ``Related:`` line (``supersedes the earlier ruling and record
  0034; leaves record 0016's exclusions in place``) is parsed into typed edges, each keeping
  the phrase it was read from.

Guarantees shared by all three: nothing is guessed (a reference that names no entry of the
bank, or only fuzzily, is reported as unresolved); nothing crosses banks; a run is idempotent
(a triple that already has any row — current, closed by a correction, or retracted by a
curator — is left alone, so a re-run writes nothing and opens no operation); runs of one bank
are serialised by a transaction-scoped advisory lock.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.db import connection, transaction

from graph.edges.links import LinkRequest, check_note, write_edge
from graph.edges.vocab import edge_types_for_bank
from graph.models import Edge, EdgeSource, EdgeType
from kb import audit
from kb.errors import Conflict, InvalidInput
from kb.models import Bank, Entry, EntryStatus, OperationKind
from kb.unit_of_work import unit_of_work

Progress = Callable[[int, int], None]

# Advisory-lock namespace (first key of pg_advisory_xact_lock(int, int)); the bank id is the second.
BACKFILL_LOCK = 0x6B62_0001

# --- results --------------------------------------------------------------------------------


@dataclass
class BackfillResult:
    """What one backfill run did. ``operation`` is None when there was nothing to write."""

    kind: str  # citations | metadata | headers
    operation: int | None = None
    edges_created: int = 0
    skipped_existing: int = 0
    unresolved: list[str] = field(default_factory=list)
    skipped_retracted: int = 0
    edges: list[int] = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "kind": self.kind,
            "operation": self.operation,
            "edges_created": self.edges_created,
            "skipped_existing": self.skipped_existing,
            "skipped_retracted": self.skipped_retracted,
            "unresolved": self.unresolved,
        }

    def summary(self) -> str:
        op = f"operation #{self.operation}" if self.operation else "no operation"
        return (
            f"{self.kind}: {self.edges_created} edges created, {self.skipped_existing} already "
            f"present, {self.skipped_retracted} retracted earlier, {len(self.unresolved)} "
            f"unresolved ({op})."
        )


@dataclass
class _Planned:
    """An edge a backfill intends to write (ends are Entry rows of the bank)."""

    from_entry: Entry
    to_entry: Entry
    relation: str
    note: str
    evidence: dict


# --- shared plumbing ------------------------------------------------------------------------


def lock_bank(bank: Bank) -> None:
    """Serialise backfills and proposal runs of one bank until the transaction ends."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [BACKFILL_LOCK, bank.pk])


def _bank_entries(bank: Bank) -> dict[int, Entry]:
    """Every entry of the bank that is not deleted, by pk (merged ones too: ids resolve)."""
    return {
        e.pk: e
        for e in Entry.objects.filter(bank=bank)
        .exclude(status=EntryStatus.DELETED)
        .only(
            "pk",
            "bank_id",
            "short_id",
            "key",
            "title",
            "content",
            "summary",
            "useful_for",
            "metadata",
            "status",
            "merged_into_id",
        )
        .order_by("pk")
    }


def _survivor(entry: Entry | None, entries: dict[int, Entry]) -> Entry | None:
    """Follow merges to the surviving entry; None if the chain ends outside the live bank."""
    seen: set[int] = set()
    while entry is not None and entry.merged_into_id is not None and entry.pk not in seen:
        seen.add(entry.pk)
        entry = entries.get(entry.merged_into_id)
    if entry is None or entry.status in (EntryStatus.MERGED, EntryStatus.DELETED):
        return None
    return entry


def _citing_entries(entries: dict[int, Entry]) -> list[Entry]:
    """Entries whose own text still speaks: not merged away (deleted ones are not loaded)."""
    return [e for e in entries.values() if e.status != EntryStatus.MERGED]


def _known_triples(bank: Bank, relations: Iterable[EdgeType]) -> dict[tuple[int, int, int], bool]:
    """(from, to, type) → whether a believed row exists (False: only closed rows remain)."""
    known: dict[tuple[int, int, int], bool] = {}
    rows = Edge.objects.filter(bank=bank, type__in=list(relations)).values_list(
        "from_entry_id", "to_entry_id", "type_id", "invalidated_at"
    )
    for from_id, to_id, type_id, closed in rows:
        key = (from_id, to_id, type_id)
        known[key] = known.get(key, False) or closed is None
    return known


def _write_planned(
    bank: Bank,
    kind: str,
    planned: list[_Planned],
    unresolved: set[str],
    *,
    source: str,
    reason: str,
    actor: str | None,
    types: dict[str, EdgeType],
) -> BackfillResult:
    """Write what is new, inside one ``backfill`` operation; open none if nothing is new."""
    result = BackfillResult(kind, unresolved=sorted(unresolved))
    known = _known_triples(bank, {types[p.relation] for p in planned})
    todo: list[_Planned] = []
    seen: set[tuple[int, int, int]] = set()
    for item in planned:
        key = (item.from_entry.pk, item.to_entry.pk, types[item.relation].pk)
        if key in seen:
            continue  # the same triple planned twice in one run: the first one wins
        seen.add(key)
        if key in known:
            if known[key]:
                result.skipped_existing += 1
            else:
                result.skipped_retracted += 1
            continue
        todo.append(item)
    if not todo:
        return result
    with unit_of_work(bank, OperationKind.BACKFILL, reason=reason, actor=actor) as op:
        for item in todo:
            req = LinkRequest(
                item.from_entry,
                item.to_entry,
                types[item.relation],
                item.note,
                item.evidence,
                source=source,
            )
            try:
                edge = write_edge(bank, req)
            except Conflict:
                result.skipped_existing += 1  # a concurrent author wrote it first
                continue
            result.edges.append(edge.pk)
        result.edges_created = len(result.edges)
        audit.record(
            op,
            backfill=kind,
            edges=result.edges,
            skipped_existing=result.skipped_existing,
            skipped_retracted=result.skipped_retracted,
            unresolved=result.unresolved,
        )
    result.operation = op.pk
    return result


def _safe_note(note: str, target: Entry, fallback: str) -> tuple[str, bool]:
    """``note`` if it keeps the note rule against ``target``, else ``fallback``; (note, kept)."""
    try:
        return check_note(note, target), True
    except InvalidInput:
        return fallback, False


# --- citations ------------------------------------------------------------------------------

# An 8-hex short_id standing alone: not inside a longer word, hash, UUID or hyphenated token.
SHORT_ID_RE = re.compile(r"(?<![\w-])([0-9a-f]{8})(?![\w-])")
CITATION_FIELDS = ("content", "summary", "useful_for")
NEUTRAL_CITATION_NOTE = "Cited by id in this entry's text."
SENTENCE_MAX = 400
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•>]+|\d+[.)])\s+")


def citing_sentence(text: str, start: int, end: int) -> str:
    """The sentence of ``text`` around ``text[start:end]``, trimmed (a window if very long)."""
    left = 0
    for match in _SENTENCE_END.finditer(text, 0, start):
        left = match.end()
    found = _SENTENCE_END.search(text, end)
    right = found.start() if found else len(text)
    sentence = _BULLET.sub("", text[left:right]).strip()
    if len(sentence) <= SENTENCE_MAX:
        return sentence
    offset = start - left
    half = SENTENCE_MAX // 2
    lo, hi = max(0, offset - half), min(len(sentence), offset + half)
    return ("…" if lo else "") + sentence[lo:hi].strip() + ("…" if hi < len(sentence) else "")


def _looks_like_id(token: str) -> bool:
    """All-digit tokens (dates, counts) are not reported as unresolved ids."""
    return not token.isdigit()


def plan_citations(bank: Bank, entries: dict[int, Entry], progress: Progress | None = None):
    """Planned ``cites`` edges and the unresolved ids, without writing anything."""
    by_short_id = {e.short_id: e for e in entries.values()}
    planned: list[_Planned] = []
    unresolved: set[str] = set()
    citing = _citing_entries(entries)
    for done, entry in enumerate(citing, 1):
        cited: set[int] = set()
        for field_name in CITATION_FIELDS:
            text = getattr(entry, field_name) or ""
            for match in SHORT_ID_RE.finditer(text):
                token = match.group(1)
                if token == entry.short_id:
                    continue  # an entry naming its own id is not a citation
                target = _survivor(by_short_id.get(token), entries)
                if target is None:
                    if _looks_like_id(token):
                        unresolved.add(token)
                    continue
                if target.pk == entry.pk or target.pk in cited:
                    continue  # its own merged-away id, or already cited earlier in the text
                cited.add(target.pk)
                sentence = citing_sentence(text, match.start(), match.end())
                note, kept = _safe_note(sentence, target, NEUTRAL_CITATION_NOTE)
                evidence = {"sentence": sentence, "field": field_name, "cited_id": token}
                if not kept:
                    evidence["note_withheld"] = "The sentence repeats the cited entry's own text."
                planned.append(_Planned(entry, target, "cites", note, evidence))
        if progress:
            progress(done, len(citing))
    return planned, unresolved


def run_backfill(
    bank: Bank,
    name: str,
    planner,
    *,
    source: str,
    reason: str,
    actor: str | None = None,
    progress: Progress | None = None,
) -> BackfillResult:
    """Plan with ``planner(bank, entries, progress)`` under the bank lock and write what it
    planned as one operation: the shape every backfill (citations, metadata, headers) shares."""
    with transaction.atomic():
        lock_bank(bank)
        planned, unresolved = planner(bank, _bank_entries(bank), progress)
        return _write_planned(
            bank,
            name,
            planned,
            unresolved,
            source=source,
            reason=reason,
            actor=actor,
            types=edge_types_for_bank(bank),
        )


def backfill_citations(
    bank: Bank, *, actor: str | None = None, progress: Progress | None = None
) -> BackfillResult:
    """Write a ``cites`` edge for every entry id named in another entry's text (same bank)."""
    return run_backfill(
        bank,
        "citations",
        plan_citations,
        source=EdgeSource.CITATION_BACKFILL,
        reason="Citation backfill: entries that name another entry's id in their text.",
        actor=actor,
        progress=progress,
    )


# --- metadata -------------------------------------------------------------------------------

# metadata key (normalised: lower case, spaces and hyphens as underscores) → relation.
METADATA_RELATIONS = {
    "supersedes": "supersedes",
    "replaces": "supersedes",
    "split_from": "split_from",
    "derived_from": "derived_from",
    "recovered_from": "derived_from",
}


def _metadata_refs(metadata: dict) -> list[tuple[str, str, str]]:
    """(metadata key, relation, reference) for every typed link in ``metadata``."""
    out = []
    if not isinstance(metadata, dict):
        return out
    for key, value in metadata.items():
        relation = METADATA_RELATIONS.get(re.sub(r"[\s-]+", "_", str(key).strip().lower()))
        if relation is None:
            continue
        values = value if isinstance(value, list) else [value]
        for ref in values:
            if isinstance(ref, str) and ref.strip():
                out.append((str(key), relation, ref.strip()))
    return out


def plan_metadata_links(bank: Bank, entries: dict[int, Entry], progress: Progress | None = None):
    """Planned typed edges from metadata links, and the references that name no entry."""
    by_short_id = {e.short_id: e for e in entries.values()}
    by_key = {e.key: e for e in entries.values() if e.key}
    planned: list[_Planned] = []
    unresolved: set[str] = set()
    citing = _citing_entries(entries)
    for done, entry in enumerate(citing, 1):
        for key, relation, ref in _metadata_refs(entry.metadata):
            found = by_short_id.get(ref.lower()) or by_key.get(ref)
            target = _survivor(found, entries)
            if target is None:
                unresolved.add(ref)
                continue
            if target.pk == entry.pk:
                continue
            evidence = {"metadata_key": key, "value": ref}
            planned.append(_Planned(entry, target, relation, "", evidence))
        if progress:
            progress(done, len(citing))
    return planned, unresolved


def backfill_metadata(
    bank: Bank, *, actor: str | None = None, progress: Progress | None = None
) -> BackfillResult:
    """Write typed edges for the links dedup left in entries' metadata (same bank)."""
    return run_backfill(
        bank,
        "metadata",
        plan_metadata_links,
        source=EdgeSource.METADATA_BACKFILL,
        reason="Metadata backfill: typed links (supersedes, split_from, …) in metadata.",
        actor=actor,
        progress=progress,
    )
