"""The header backfill (``001_*``): a ``Related:`` line is parsed into typed edges, each keeping
its source phrase as evidence. The shared plumbing (locking, planning, writing one ``backfill``
operation) lives in :mod:`graph.ingest.backfill`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from graph.ingest.backfill import (
    BackfillResult,
    Progress,
    _citing_entries,
    _Planned,
    _safe_note,
    _survivor,
    run_backfill,
)
from graph.models import EdgeSource
from graph.resolution.aliases import resolve
from kb.models import Bank, Entry

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
    :func:`graph.resolution.aliases.resolve`; ``relation`` is the edge type; ``reversed`` means
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
    return run_backfill(
        bank,
        "headers",
        plan_header_links,
        source=EdgeSource.HEADER_PARSE,
        reason="Header backfill: relations stated on entries' 'Related:' lines.",
        actor=actor,
        progress=progress,
    )
