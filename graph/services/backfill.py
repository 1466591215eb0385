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

from graph.models import Edge, EdgeSource, EdgeType
from graph.services.aliases import resolve
from graph.services.edges import LinkRequest, check_note, write_edge
from graph.services.vocab import edge_types_for_bank
from kb import audit
from kb.errors import Conflict, InvalidInput
from kb.models import Bank, Entry, EntryStatus, OperationKind

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
    with audit.operation(bank, OperationKind.BACKFILL, reason=reason, actor=actor) as op:
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


def backfill_citations(
    bank: Bank, *, actor: str | None = None, progress: Progress | None = None
) -> BackfillResult:
    """Write a ``cites`` edge for every entry id named in another entry's text (same bank)."""
    with transaction.atomic():
        lock_bank(bank)
        entries = _bank_entries(bank)
        planned, unresolved = plan_citations(bank, entries, progress)
        return _write_planned(
            bank,
            "citations",
            planned,
            unresolved,
            source=EdgeSource.CITATION_BACKFILL,
            reason="Citation backfill: entries that name another entry's id in their text.",
            actor=actor,
            types=edge_types_for_bank(bank),
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
    with transaction.atomic():
        lock_bank(bank)
        entries = _bank_entries(bank)
        planned, unresolved = plan_metadata_links(bank, entries, progress)
        return _write_planned(
            bank,
            "metadata",
            planned,
            unresolved,
            source=EdgeSource.METADATA_BACKFILL,
            reason="Metadata backfill: typed links (supersedes, split_from, …) in metadata.",
            actor=actor,
            types=edge_types_for_bank(bank),
        )


# --- headers --------------------------------------------------------------------------------
#
# THE COMMA RULE (``001_*``: "refines record A, record B, record C, record D" must not type all
# four). Within a clause (';' or a sentence end closes one), a verb governs the references that
# follow it until a bare comma, the clause end, or the next verb. A comma followed directly by
# a real connector (", and", ", as well as", ", plus") does not break it; a comma followed by
# anything else is bare and does, and once broken the verb stays broken for the rest of the
# clause, so a reference joined by "and" to a verbless reference is verbless too. Words that are not references ("the earlier ruling") do not break it either:
# "supersedes the earlier ruling and record 0034" types record 0034.
# A verbless reference becomes ``see_also`` with the reason in its evidence; an unknown verb
# ("leaves record 0016's exclusions in place") becomes ``see_also`` with the verb in evidence.
#
# "extends" → derived_from (not clarifies): an extension adds scope on top of the target and
# leaves it standing, which is what the vocabulary's derived_from ("builds on the target")
# says; clarifies would make the extension dominate the target in a fold.

HEADER_PREFIX = re.compile(r"^\s*related\s*:\s*", re.IGNORECASE)
CONNECTORS = (("as", "well", "as"), ("and",), ("plus",), ("&",))
FILLERS = {"the", "a", "an", "this", "that", "these", "those", "its", "their", "our", "both"}
REFERENCE_WORDS = (
    "record",
    "decision",
    "adr",
    "rfc",
    "ticket",
    "issue",
    "card",
    "entry",
    "policy",
    "case",
)
NO_VERB_COMMA = "no verb of its own (comma)"
NO_VERB_STATED = "no verb stated"

# Header verbs → relation. Phrases in VERBS_REVERSED name the referenced entry as the source
# ("superseded by record 0040": record 0040 supersedes this entry).
VERBS = {
    "supersedes supersede replaces replace": "supersedes",
    "amends amend corrects correct fixes fix": "corrects",
    "refines refine clarifies clarify": "clarifies",
    "extends extend": "derived_from",
    "cites cite": "cites",
    "see": "see_also",
    "precedes": "precedes",
    "requires": "requires",
}
VERB_PHRASES = {
    "split from": "split_from",
    "splits from": "split_from",
    "split out of": "split_from",
    "derived from": "derived_from",
    "derives from": "derived_from",
    "builds on": "derived_from",
    "build on": "derived_from",
    "part of": "part_of",
    "see also": "see_also",
    "conflicts with": "conflicts_with",
    "depends on": "requires",
}
VERBS_REVERSED = {
    "superseded by": "supersedes",
    "replaced by": "supersedes",
    "amended by": "corrects",
    "corrected by": "corrects",
    "fixed by": "corrects",
    "refined by": "clarifies",
    "clarified by": "clarifies",
    "extended by": "derived_from",
    "follows": "precedes",
}


def _verb_table() -> dict[tuple[str, ...], tuple[str, bool]]:
    """Verb words (a tuple, for multi-word verbs) → (relation, reversed)."""
    table = {(word,): (rel, False) for words, rel in VERBS.items() for word in words.split()}
    table.update({tuple(p.split()): (rel, False) for p, rel in VERB_PHRASES.items()})
    table.update({tuple(p.split()): (rel, True) for p, rel in VERBS_REVERSED.items()})
    return table


HEADER_VERBS = _verb_table()
_LONGEST_VERB = max(len(k) for k in HEADER_VERBS)

_TOKEN_RE = re.compile(
    r"""
    (?P<quoted>"(?P<q1>[^"]+)"|“(?P<q2>[^”]+)”|`(?P<q3>[^`]+)`)
  | (?P<kindref>\b(?P<kind>REFWORDS)s?\s+\#?(?P<num>\d+[a-z]?)\b)
  | (?P<key>\b[a-z][a-z0-9_-]*:[A-Za-z0-9][\w./-]*)
  | (?P<shortid>(?<![\w-])[0-9a-f]{8}(?![\w-]))
  | (?P<num_only>(?<![\w-])\#?\d+[a-z]?\b)
  | (?P<comma>,)
  | (?P<amp>&)
  | (?P<word>[^\W\d_][\w'’-]*)
    """.replace("REFWORDS", "|".join(REFERENCE_WORDS)),
    re.IGNORECASE | re.VERBOSE,
)


@dataclass
class ParsedRef:
    """One reference read from a header line.

    ``text`` is the reference as written; ``lookups`` are the strings tried, in order, with
    :func:`graph.services.aliases.resolve`; ``relation`` is the edge type; ``reversed`` means
    the referenced entry is the edge's source ("superseded by record 0040"); ``phrase`` is
    the source phrase kept in the edge's evidence; ``why`` says why a reference is untyped.
    """

    text: str
    lookups: tuple[str, ...]
    relation: str
    phrase: str
    verb: str | None = None
    reversed: bool = False
    why: str = ""


@dataclass
class _Tok:
    kind: str  # ref | verb | connector | comma | word
    start: int
    end: int
    text: str
    lookups: tuple[str, ...] = ()
    relation: str = ""
    reversed: bool = False
    known: bool = True


def _kind_lookups(kind: str, num: str) -> tuple[str, ...]:
    kind = kind.lower()
    num = num.lstrip("#").lower()
    out = [f"{kind}:{num}"]
    digits = re.match(r"\d+", num).group(0)
    suffix = num[len(digits) :]
    for variant in (str(int(digits)), digits.zfill(4)):
        candidate = f"{kind}:{variant}{suffix}"
        if candidate not in out:
            out.append(candidate)
    return tuple(out)


def _tokenize(clause: str) -> list[_Tok]:
    raw: list[_Tok] = []
    last_kind: str | None = None
    for m in _TOKEN_RE.finditer(clause):
        s, e = m.span()
        if m.group("quoted"):
            name = m.group("q1") or m.group("q2") or m.group("q3")
            raw.append(_Tok("ref", s, e, m.group(0), (name.strip(),)))
        elif m.group("kindref"):
            last_kind = m.group("kind").lower()
            raw.append(_Tok("ref", s, e, m.group(0), _kind_lookups(last_kind, m.group("num"))))
        elif m.group("key"):
            raw.append(_Tok("ref", s, e, m.group(0), (m.group(0),)))
        elif m.group("shortid"):
            raw.append(_Tok("ref", s, e, m.group(0), (m.group(0).lower(),)))
        elif m.group("num_only"):
            # "records 0012 and 0013": a bare number continues the last kind of reference.
            joined = raw and (
                raw[-1].kind in ("ref", "comma", "connector")
                or raw[-1].text.lower() in ("and", "plus", "as")
            )
            if last_kind and joined:
                num = m.group(0)
                raw.append(_Tok("ref", s, e, f"{last_kind} {num}", _kind_lookups(last_kind, num)))
            else:
                raw.append(_Tok("word", s, e, m.group(0)))
        elif m.group("comma"):
            raw.append(_Tok("comma", s, e, ","))
        elif m.group("amp"):
            raw.append(_Tok("connector", s, e, "&"))
        else:
            raw.append(_Tok("word", s, e, m.group(0)))
    # Multi-word verbs and connectors, longest first.
    toks: list[_Tok] = []
    i = 0
    while i < len(raw):
        tok = raw[i]
        if tok.kind == "word":
            matched = False
            for size in range(min(_LONGEST_VERB, len(raw) - i), 0, -1):
                group = raw[i : i + size]
                if any(t.kind != "word" for t in group):
                    continue
                words = tuple(t.text.lower() for t in group)
                hit = HEADER_VERBS.get(words)
                kind = "verb" if hit else ("connector" if words in CONNECTORS else None)
                if kind:
                    relation, rev = hit if hit else ("", False)
                    toks.append(
                        _Tok(
                            kind,
                            group[0].start,
                            group[-1].end,
                            clause[group[0].start : group[-1].end],
                            relation=relation,
                            reversed=rev,
                        )
                    )
                    i += size
                    matched = True
                    break
            if matched:
                continue
        toks.append(tok)
        i += 1
    # Unknown verbs: a word that opens the clause (or follows a connector or comma) and is
    # followed, past articles only, by a reference: "leaves record 0016's exclusions".
    for i, tok in enumerate(toks):
        if tok.kind != "word" or tok.text.lower() in FILLERS:
            continue
        if i > 0 and toks[i - 1].kind not in ("connector", "comma"):
            continue
        j = i + 1
        while j < len(toks) and toks[j].kind == "word" and toks[j].text.lower() in FILLERS:
            j += 1
        if j < len(toks) and toks[j].kind == "ref":
            tok.kind, tok.relation, tok.known = "verb", "see_also", False
    return toks


def _trailing_end(clause: str, toks: list[_Tok], i: int) -> int:
    """End of the words after reference ``i`` that still belong to it ("'s exclusions in
    place"): up to the next comma, connector, reference or verb."""
    end = toks[i].end
    for tok in toks[i + 1 :]:
        if tok.kind != "word":
            break
        end = tok.end
    return end


def _parse_clause(clause: str) -> list[ParsedRef]:
    toks = _tokenize(clause)
    out: list[ParsedRef] = []
    verb: _Tok | None = None
    governed = False  # the verb still reaches the next reference
    comma_pending = False
    broken_by_comma = False
    last_connector: _Tok | None = None
    verb_at = -1
    for i, tok in enumerate(toks):
        if tok.kind == "verb":
            verb, governed, comma_pending, broken_by_comma = tok, True, False, False
            verb_at = i
            last_connector = None
        elif tok.kind == "comma":
            comma_pending = True
            last_connector = None
        elif tok.kind == "connector":
            comma_pending = False  # ", and" is a real connector
            last_connector = tok
        elif tok.kind == "word" and comma_pending:
            # ", the old ruling and record 2": the comma was bare, the list lost its verb
            governed, broken_by_comma, comma_pending = False, True, False
        elif tok.kind == "ref":
            if comma_pending:
                governed, broken_by_comma = False, True
            comma_pending = False
            end = _trailing_end(clause, toks, i)
            own_start = last_connector.start if last_connector else tok.start
            if verb is not None and governed:
                adjacent = all(
                    t.kind == "word" and t.text.lower() in FILLERS for t in toks[verb_at + 1 : i]
                )
                if adjacent:
                    phrase = clause[verb.start : end]
                else:
                    phrase = f"{verb.text} ... {clause[own_start:end]}"
                why = "" if verb.known else f"verb {verb.text!r} is not a typed relation"
                out.append(
                    ParsedRef(
                        tok.text,
                        tok.lookups,
                        verb.relation,
                        phrase.strip(),
                        verb.text,
                        verb.reversed,
                        why,
                    )
                )
            else:
                why = NO_VERB_COMMA if verb is not None and broken_by_comma else NO_VERB_STATED
                out.append(
                    ParsedRef(
                        tok.text,
                        tok.lookups,
                        "see_also",
                        clause[own_start:end].strip(),
                        None,
                        False,
                        why,
                    )
                )
            last_connector = None
    return out


def parse_header(line: str) -> list[ParsedRef]:
    """Read one ``Related:`` line into references with relations and source phrases (pure)."""
    body = HEADER_PREFIX.sub("", line or "", count=1)
    refs: list[ParsedRef] = []
    for clause in re.split(r";|\.(?:\s+|$)", body):
        if clause.strip():
            refs.extend(_parse_clause(clause.strip()))
    return refs


def header_lines(content: str) -> list[str]:
    """The ``Related:`` lines of ``content``, each joined with its indented continuation lines."""
    lines = (content or "").splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        if HEADER_PREFIX.match(lines[i]):
            parts = [lines[i].strip()]
            i += 1
            while i < len(lines) and lines[i][:1] in (" ", "\t") and lines[i].strip():
                parts.append(lines[i].strip())
                i += 1
            out.append(" ".join(parts))
            continue
        i += 1
    return out


def _resolve_exact(
    bank: Bank, ref: ParsedRef, entries: dict[int, Entry], cache: dict[str, Entry | None]
) -> Entry | None:
    """The entry a reference names by id, key or alias; fuzzy matches are not accepted.

    ``cache`` starts with the bank's short_ids and keys (the first two steps of
    :func:`resolve`, answered from memory); anything else goes through :func:`resolve`.
    """
    for text in ref.lookups:
        if text not in cache:
            found = resolve(bank, text)
            ok = found.status == "resolved" and found.matched != "fuzzy"
            cache[text] = _survivor(entries.get(found.entry.pk), entries) if ok else None
        if cache[text] is not None:
            return cache[text]
    return None


def _exact_names(entries: dict[int, Entry]) -> dict[str, Entry | None]:
    names: dict[str, Entry | None] = {}
    for field_name in ("key", "short_id"):  # a short_id wins over a key, as in resolve()
        for entry in entries.values():
            if getattr(entry, field_name):
                names[getattr(entry, field_name)] = _survivor(entry, entries)
    return {name: entry for name, entry in names.items() if entry is not None}


def plan_header_links(bank: Bank, entries: dict[int, Entry], progress: Progress | None = None):
    """Planned edges from ``Related:`` header lines, and the references that name no entry."""
    planned: list[_Planned] = []
    unresolved: set[str] = set()
    cache = _exact_names(entries)
    citing = [e for e in _citing_entries(entries) if e.content and "related" in e.content.lower()]
    for done, entry in enumerate(citing, 1):
        for line in header_lines(entry.content):
            for ref in parse_header(line):
                target = _resolve_exact(bank, ref, entries, cache)
                if target is None:
                    unresolved.add(ref.text)
                    continue
                if target.pk == entry.pk:
                    continue
                source, dest = (target, entry) if ref.reversed else (entry, target)
                evidence = {"source_phrase": ref.phrase, "header": line, "reference": ref.text}
                if ref.verb:
                    evidence["verb"] = ref.verb
                if ref.why:
                    evidence["note"] = ref.why
                note = ""
                if ref.verb and ref.why:  # an untyped verb: its phrase says how it pertains
                    note, _ = _safe_note(ref.phrase, dest, "")
                planned.append(_Planned(source, dest, ref.relation, note, evidence))
        if progress:
            progress(done, len(citing))
    return planned, unresolved


def backfill_headers(
    bank: Bank, *, actor: str | None = None, progress: Progress | None = None
) -> BackfillResult:
    """Write the typed edges stated by entries' ``Related:`` header lines (same bank)."""
    with transaction.atomic():
        lock_bank(bank)
        entries = _bank_entries(bank)
        planned, unresolved = plan_header_links(bank, entries, progress)
        return _write_planned(
            bank,
            "headers",
            planned,
            unresolved,
            source=EdgeSource.HEADER_PARSE,
            reason="Header backfill: relations stated on entries' 'Related:' lines.",
            actor=actor,
            types=edge_types_for_bank(bank),
        )
