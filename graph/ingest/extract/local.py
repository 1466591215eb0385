"""The local extractor: the bank's relation phrases matched in prose, no network, no model.

For each sentence of an entry's title and content, every relation phrase of the vocabulary
(``EdgeType.phrases``, and ``inverse_phrases`` read the other way round) is found, also in
its plural form ("the riggers need", "are owned by") where it is a finite verb; its subject is
the name of the bank before it and its objects the names after it ("requires the Tooling
Register and the Parts Catalogue" gives two). Where no name of the bank stands there, a
capitalised noun phrase is kept as a surface form, to be resolved (or left unresolved) by
validation. A subject pronoun ("It", "This step") or "the" with the entry's head noun or kind
("The check …" in "Overnight Check", "The step …" in a step) at the head of a sentence stands
for the entry itself, and so does the subject of a field label ("Requires: A, B.").

Which name a phrase joins is read from the clause structure (``clauses``), not from
adjacency alone:

- a relative clause's subject is not the main verb's ("the Cue Sheet that the Lighting Crew
  owns is signed off by the DSM": the Cue Sheet is signed off; the Lighting Crew owns it);
- a parenthetical is skipped ("The DSM, who is part of Stage Management, owns …"), and a
  subject relative pronoun stands for the name before it ("the riggers, who need …");
- a verb joined by "and"/"but" keeps its subject ("X requires A and is signed off by B"),
  and a coordinated subject gives one statement per name ("The tech and the dress require …");
- a list ends where a name is followed by a verb ("…, and the Get-Out follows …"); a
  possessor ("Wardrobe's booth"), a name after a preposition ("the key to the Paint Frame"),
  an infinitive object ("manages to keep …"), a name inside another noun phrase ("patience
  from the DSM", "the reason the Get-In overruns") or modifying the noun after it ("the
  Playout checklist"; not "the Sales team", "needs the dock clear") are no ends.

Phrase forms (plural, passive, perfect, ellipsis) are in ``phrases``; "respectively", an
object "it" (the entry, when no other name could be meant), asides between dashes and a
group's members are read here with ``clauses``; sequences without a phrase ("First A, then
B", "After A, …") are in ``sequences``.

It states only what the sentence says holds now, and nothing is inferred across sentences
(the cues are in ``cues``): a negation in the clause of the phrase drops it; a hypothesis,
plan, hedge, restriction or question drops the whole sentence; so does a history cue.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from graph.ingest.extract import clauses as cl
from graph.ingest.extract import semantic
from graph.ingest.extract import sequences as sq
from graph.ingest.extract.base import Statement, Vocabulary
from graph.ingest.extract.cues import (
    HEDGES,
    NEGATIONS,
    not_a_present_fact,
    obeys,
    outside_names,
    present_fact_clauses,
)
from graph.ingest.extract.mentions import Mention, MentionIndex
from graph.ingest.extract.phrases import Phrase as _Phrase
from graph.ingest.extract.phrases import PhraseMatcher, plural_form, reduced_form
from graph.ingest.extract.sequences import RELATION
from kb.models import Entry

__all__ = [
    "LocalExtractor",
    "PhraseMatcher",
    "not_a_present_fact",
    "plural_form",
    "reduced_form",
    "sentences",
]

SENTENCE = re.compile(r"[^\n]+?(?:[.!?](?=\s|$)|$)", re.MULTILINE)
WORD = cl.WORD
CLAUSE_PUNCT = re.compile(r"[,;:()\[\]]")
CLAUSE_WORDS = {
    "which", "that", "who", "when", "where", "while", "if", "because", "so", "then", "but",
    "and", "or", "before", "after", "once", "until", "unless", "whereas", "whom",
}  # fmt: skip
PRONOUNS = {"it", "this"}  # "they" is plural: never the entry itself
SELF_NOUNS = {
    "service", "step", "process", "team", "policy", "role", "system", "entry", "document",
    "task", "check", "form", "procedure", "tool", "job", "record", "unit", "component",
}  # fmt: skip
MAX_GAP_WORDS = 3
# "A, B and the C", also with a participle before the name ("needs A and a closed B").
COORDINATION = re.compile(
    r"^\s*(?:,\s*(?:and|or)?|and|or|as well as)\s+(?:the\s+|a\s+|an\s+)?(?:[a-z]+ed\s+)?$"
)
PRIOR = 0.9
# A phrase's object announced by a colon: "needs three things: …", "owns: …".
COLON_LEAD = re.compile(r"^\s*(?:[a-z]+\s+){0,2}[a-z]*\s*:\s*(?:the\s+|a\s+|an\s+)?$")


@dataclass
class _Subject:
    spans: list[tuple[int, int]]
    is_self: bool = False
    antecedent: Mention | None = None  # the object of a relative clause's verb ("that X owns")
    check_from: int = 0  # negation and hedge words count from here to the phrase
    reduced: bool = False  # read for a participle: "X: owned by A, signed off by B"
    clause: str = ""  # how the clause structure gave the subject (kept in the basis)


@dataclass
class _Reading:
    sentence: str
    mentions: list[Mention]
    phrases: list[_Phrase] = field(default_factory=list)

    def phrase_between(self, lo: int, hi: int) -> bool:
        return any(lo <= p.start and p.end <= hi for p in self.phrases)

    def verb_follows(self, end: int) -> bool:
        """A verb right after ``end``: an auxiliary or a relation phrase."""
        nxt = cl.next_word(self.sentence, end)
        if nxt is None:
            return False
        return nxt[0] in cl.AUXILIARIES or any(p.start == nxt[1] for p in self.phrases)


def sentences(text: str) -> list[tuple[int, int]]:
    """Sentence offsets in ``text``: ends at . ! ? before a space, or at a line break."""
    out = []
    for m in SENTENCE.finditer(text or ""):
        start, end = m.start(), m.end()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            out.append((start, end))
    return out


def _words(text: str) -> list[str]:
    return cl.words(text)


def _clause_start(sentence: str, before: int, mentions: list[Mention]) -> int:
    """Where the clause holding position ``before`` starts: after the last punctuation mark
    or clause word ("which", "and", …) before it that is not part of a name of the bank."""
    start = 0
    for m in CLAUSE_PUNCT.finditer(sentence, 0, before):
        start = m.end()
    for m in re.finditer(r"\w+", sentence[:before]):
        inside = any(n.start <= m.start() < n.end for n in mentions)
        if m.start() >= start and not inside and m.group().lower() in CLAUSE_WORDS:
            start = m.end()
    return start


def _clean_gap(gap: str) -> bool:
    return not CLAUSE_PUNCT.search(gap) and len(_words(gap)) <= MAX_GAP_WORDS


def _clean_object_gap(gap: str) -> bool:
    """Words between a phrase and its object: no second noun phrase ("the reason the X") and
    no source ("patience from the X"): the name then belongs to another noun."""
    return _clean_gap(gap) and cl.det_count(gap) <= 1 and "from" not in _words(gap)


def _plural_subject(sentence: str, subject: _Subject) -> bool:
    """The subject agrees with a plural verb: several names, a plural noun ("the riggers"),
    or the subject of a mandative "that" clause ("requires that the crew sign off")."""
    if len(subject.spans) > 1:
        return True
    if subject.is_self:
        return False
    start, end = subject.spans[0]
    last = _words(sentence[start:end])[-1:] or [""]
    if last[0].endswith("s") and not last[0].endswith(("ss", "us", "is")):
        return True
    lead = _words(sentence[:start])
    while lead and lead[-1] in cl.LEADING:
        lead.pop()
    return lead[-1:] == ["that"]


def _negated_after(sentence: str, phrase: _Phrase, mentions: list[Mention]) -> bool:
    """A negation between the phrase and the end of its clause ("is owned by no one")."""
    rest = outside_names(sentence, mentions)[phrase.end :]
    cut = CLAUSE_PUNCT.search(rest)
    rest = rest[: cut.start()] if cut else rest
    words = _words(rest)
    for i, word in enumerate(words):
        if word in CLAUSE_WORDS:
            words = words[:i]
            break
    return bool(set(words) & NEGATIONS)


class LocalExtractor:
    """Phrases of the vocabulary plus names of the bank: see the module docstring."""

    name = "local"

    def __init__(self, index: MentionIndex, *, by_meaning: bool | None = None):
        self.index = index
        # Relations said in other words, matched by the model (``semantic``): on by default
        # with the bank's MiniLM embedder, the one its thresholds were chosen for.
        self.by_meaning = by_meaning
        self.meaning_threshold, self.meaning_margin = semantic.THRESHOLD, semantic.MARGIN
        self._meaning: tuple[Vocabulary, semantic.RelationsByMeaning | None] | None = None
        self._matcher: PhraseMatcher | None = None
        self._vocabulary: Vocabulary | None = None
        self._entry_title = ""  # what a field label's subject ("Requires: …") is called
        self._entry_pk: int | None = None
        self._entry_nouns: set[str] = set()  # "the check" in "Overnight Check": the entry

    def about(self, entry: Entry) -> None:
        """Read the next sentences as the text of ``entry``: "the <its head noun or kind>"
        ("The check …" in "Overnight Check", "The step …" in a step) names the entry."""
        self._entry_title = entry.title
        self._entry_pk = entry.pk
        heads = _words(entry.title)[-1:]
        kind = getattr(entry.kind, "name", "") if entry.kind_id else ""
        self._entry_nouns = {w for w in heads + [kind.lower()] if w and w.isalpha()}

    def extract(self, entry: Entry, vocabulary: Vocabulary) -> list[Statement]:
        if self._vocabulary is not vocabulary:
            self._matcher, self._vocabulary = PhraseMatcher(vocabulary), vocabulary
        out, waiting = [], []
        self.about(entry)
        for text in (entry.title, entry.content):
            for start, end in sentences(text):
                read, found = self._read(text[start:end])
                out.extend(read)
                waiting.extend(found)
        return out + self._by_meaning(waiting)  # one model call per entry

    def read_sentence(self, sentence: str) -> list[Statement]:
        read, found = self._read(sentence)
        return read + self._by_meaning(found)

    def _meaning_model(self) -> semantic.RelationsByMeaning | None:
        """The phrase vectors of the current vocabulary, built once; None when off."""
        if self._meaning is not None and self._meaning[0] is self._vocabulary:
            return self._meaning[1]
        model = None
        if self.by_meaning is not False and self._vocabulary is not None:
            from django.conf import settings

            from kb.services.embedding import get_embedder

            on = self.by_meaning or getattr(settings, "KB_EXTRACT_BY_MEANING", True)
            embedder = get_embedder() if on else None
            if embedder is not None and embedder.name == semantic.MODEL:
                model = semantic.RelationsByMeaning(self._vocabulary, embedder)
        self._meaning = (self._vocabulary, model)
        return model

    def _by_meaning(self, found: list[tuple[str, semantic.Candidate]]) -> list[Statement]:
        model = self._meaning_model() if found else None
        if model is None:
            return []
        matches = model.match_all([c.predicate for _, c in found])
        out = []
        for span, c in found:
            for st in semantic.statements(
                [c], matches, threshold=self.meaning_threshold, margin=self.meaning_margin
            ):
                out.append(replace(st, span=span))
        return out

    def _read(self, sentence: str) -> tuple[list[Statement], list[tuple[str, semantic.Candidate]]]:
        """The sentence's statements from phrases, and the pairs left for the model."""
        span, sentence = sentence, cl.without_dash_asides(sentence)
        found = self.index.find(span, own_nouns=self._entry_nouns)
        mentions = [m for m in found if sentence[m.start : m.end].strip()]
        facts = present_fact_clauses(sentence, mentions)
        if not facts:
            return [], []
        reading = _Reading(sentence, mentions)
        reading.phrases = self._matcher.find(sentence, mentions)
        out: list[Statement] = []
        previous: _Subject | None = None
        done: list[tuple[_Phrase, list[tuple[int, int]]]] = []
        for phrase in reading.phrases:
            if not any(lo <= phrase.start < hi for lo, hi in facts):
                continue  # "A may be paged, but B owns C": only the second clause is a fact
            subject = self._subject(reading, phrase, previous)
            if subject is None:
                continue
            previous = subject
            if phrase.plural and not _plural_subject(sentence, subject):
                continue  # "Legal, who …, follow …": a plural verb needs a plural subject
            objects = self._objects(reading, phrase, subject.antecedent)
            done.append((phrase, objects))  # "…; the PM does" repeats this verb phrase
            if self._negated(reading, phrase, subject):
                continue
            if any(cl.object_pronoun(sentence[a:b]) for a, b in objects):
                objects = objects if self._only_the_entry(reading, subject) else []
            if objects and obeys(sentence, phrase, objects[-1][1]):
                continue  # "follows the plan to the letter": obeys it, no sequence
            for s_span, o_span in cl.pairs(sentence, phrase.end, subject.spans, objects):
                out.append(self._statement(sentence, phrase, subject, s_span, o_span))
        if RELATION in self._vocabulary.relations:
            out += self._sequence(sentence, mentions, facts)
        for name, (phrase, objects) in cl.elliptical_subjects(sentence, mentions, facts, done):
            subject = _Subject([(name.start, name.end)], clause="ellipsis")
            out += [
                self._statement(sentence, phrase, subject, (name.start, name.end), o)
                for o in objects
            ]
        found = []
        if self.by_meaning is not False:
            spans = [(p.start, p.end) for p in reading.phrases]
            start_of = lambda at: _clause_start(sentence, at, mentions)  # noqa: E731
            found = semantic.candidates(sentence, mentions, spans, facts, start_of)
            owner = semantic.ownership(self._vocabulary)
            out += semantic.possessive_statements(sentence, mentions, facts, owner, start_of)
        out = [replace(st, span=span) for st in out] if span != sentence else out
        return out, [(span, c) for c in found]

    def _sequence(self, sentence: str, mentions: list[Mention], facts) -> list[Statement]:
        """ "First A, then B", "After A, the crew does B": A precedes B (``sequences``)."""
        found = [(a, b, "then") for a, b in sq.then_list(sentence, mentions)]
        after = sq.fronted_after(sentence, mentions)
        found += [(after[0], after[1], "after")] if after else []
        return [
            Statement(
                span=sentence,
                relation=RELATION,
                from_text=sentence[a.start : a.end],
                to_text=sentence[b.start : b.end],
                prior=PRIOR,
                basis=f"sequence:{how}",
            )
            for a, b, how in found
            if any(lo <= a.start and b.end <= hi for lo, hi in facts)
        ]

    def _only_the_entry(self, r: _Reading, subject: _Subject) -> bool:
        """An object "it" stands for the entry only when no name but the entry's and the
        subject's stands in the sentence ("X belongs to the network, and the crew maintains
        it" in X's text): another name could be what "it" refers to."""
        spans = subject.spans
        return all(
            m.entry_pks == (self._entry_pk,) or any(a <= m.start < b for a, b in spans)
            for m in r.mentions
        )

    def _statement(self, sentence, phrase: _Phrase, subject: _Subject, s_span, o_span):
        a, b = sentence[s_span[0] : s_span[1]], sentence[o_span[0] : o_span[1]]
        if not a:  # a field label's subject is the entry: named by its title
            a = self._entry_title or sentence[phrase.start : phrase.end]
        a_self, b_self = subject.is_self, cl.object_pronoun(b)
        if phrase.inverse:  # "X is required by Y": Y requires X
            a, b, a_self, b_self = b, a, b_self, a_self
        return Statement(
            span=sentence,
            relation=phrase.relation,
            from_text=a,
            to_text=b,
            prior=PRIOR,
            from_self=a_self,
            to_self=b_self,
            basis=f"phrase:{phrase.phrase}"
            + (f";clause:{subject.clause}" if subject.clause else ""),
        )

    @staticmethod
    def _negated(r: _Reading, phrase: _Phrase, subject: _Subject) -> bool:
        gap = r.sentence[subject.check_from : phrase.start] if not subject.is_self else ""
        if set(_words(outside_names(gap, []))) & (NEGATIONS | HEDGES):
            return True
        clause = r.sentence[_clause_start(r.sentence, phrase.start, r.mentions) : phrase.start]
        return bool(set(_words(clause)) & NEGATIONS) or _negated_after(
            r.sentence, phrase, r.mentions
        )

    def _subject(self, r: _Reading, phrase: _Phrase, previous: _Subject | None):
        s, mentions = r.sentence, r.mentions
        if phrase.reduced:  # "X, run by Y," / "X: owned by A, signed off by B"
            if previous is not None and previous.reduced:
                return _Subject(previous.spans, previous.is_self, reduced=True, clause="reduced")
            named = cl.mention_ending_at(mentions, len(s[: phrase.start].rstrip()[:-1].rstrip()))
            if named is None:  # "Owned by the FSO: A, B, C": the items are the subjects
                items = cl.label_subjects(s, phrase.start, phrase.end, mentions)
                return _Subject(items, reduced=True, clause="label") if items else None
            span = (named.start, named.end)
            return _Subject([span], reduced=True, check_from=phrase.start, clause="reduced")
        clause_start = _clause_start(s, phrase.start, mentions)
        before = [m for m in mentions if m.end <= phrase.start]
        if before and before[-1].start >= clause_start:
            m = before[-1]
            gap = s[m.end : phrase.start]
            head = cl.head_of_modifier(s, m, before[:-1], clause_start)
            if head is not None and _clean_gap(gap):
                return self._named_subject(r, phrase, head, clause_start)  # "X for Y relies on"
            if _clean_gap(gap):
                return self._named_subject(r, phrase, m, clause_start)
        clause = s[clause_start : phrase.start]
        words = _words(clause)
        if not words and not s[:clause_start].strip() and s[phrase.end :].lstrip()[:1] == ":":
            return _Subject([(phrase.start, phrase.start)], True)  # a field label: "Requires: …"
        described = self._names_the_entry(words[:-1] if words[-1:] == ["itself"] else words)
        if (
            (len(words) == 1 and words[0] in PRONOUNS)
            or (len(words) == 2 and words[0] == "this" and words[1] in SELF_NOUNS)
            or described
        ):
            earlier = [m for m in mentions if m.end <= clause_start]
            if earlier:
                return None  # "…; it was replaced by …": "it" may be the name before
            lead = len(clause) - len(clause.lstrip())
            return _Subject([(clause_start + lead, clause_start + len(clause.rstrip()))], True)
        if all(w in cl.ADVERBS for w in words):
            found = self._carried_subject(r, clause_start, previous)
            if found is not None or words or clause_start > 0:
                return found
        return self._capitalised_subject(r, phrase, clause, clause_start)

    def _names_the_entry(self, words: list[str]) -> bool:
        """ "The check", "the tube system" in the text of "Pneumatic Tube System" / a check."""
        if len(words) < 2 or words[0] not in {"the", "this"} or words[-1] not in self._entry_nouns:
            return False
        title = _words(self._entry_title)
        return len(words) == 2 or all(w in title for w in words[1:])

    def _named_subject(self, r: _Reading, phrase: _Phrase, m: Mention, clause_start: int):
        """The name right before the phrase, read through relative clauses and lists."""
        s = r.sentence
        if cl.possessor(s, m.end) or cl.after_preposition(s, m.start, clause_start):
            return None  # "Wardrobe's booth is …", "the key to the Paint Frame belongs …"
        embedded, antecedent = cl.relative_head(s, m, r.mentions)
        gap_words = [w for w in _words(s[m.end : phrase.start]) if w not in cl.ADVERBS]
        if embedded and gap_words:
            # "the Cue Sheet that the Lighting Crew owns is signed off by": the verb of the
            # relative clause stands between, so the main verb's subject is what it modifies.
            if antecedent is None:
                return None
            span = (antecedent.start, antecedent.end)
            return _Subject([span], check_from=m.end, clause="relative")
        if r.phrase_between(m.end, phrase.start) or cl.modifies_next_noun(s, m.end, phrase.start):
            return None  # "the Parts Catalogue updates are issued by": the name modifies a noun
        spans = self._coordinated_before(r, m) or [(m.start, m.end)]
        clause = "coordinated" if len(spans) > 1 else ""
        if embedded and antecedent is not None:
            return _Subject(spans, antecedent=antecedent, check_from=m.end, clause="relative")
        return _Subject(spans, check_from=m.end, clause=clause)

    def _coordinated_before(self, r: _Reading, m: Mention) -> list[tuple[int, int]]:
        """A subject list that begins its clause: "The tech and the dress require …"."""
        s, chain = r.sentence, [m]
        earlier = [p for p in r.mentions if p.end <= m.start]
        while earlier and COORDINATION.match(cl.after_members(s, earlier[-1].end, chain[0].start)):
            chain.insert(0, earlier.pop())
        while len(chain) > 1:
            first = chain[0]
            lead = _words(s[_clause_start(s, first.start, r.mentions) : first.start])
            if all(w in cl.LEADING for w in lead):
                return [(p.start, p.end) for p in chain]
            chain.pop(0)
        return []

    def _carried_subject(self, r: _Reading, clause_start: int, previous: _Subject | None):
        """The subject of a clause with none of its own: a relative pronoun's name, the name
        before a parenthetical, or the subject of the verb joined by "and"/"but"."""
        s = r.sentence
        boundary = s[:clause_start].rstrip()
        word = re.search(r"(\w+)$", boundary)
        if word and word.group(1).lower() in {"who", "which", "that"}:
            name = cl.antecedent_of(s, word.start(1), r.mentions)
            if name is None:
                return None
            return _Subject([(name.start, name.end)], check_from=clause_start, clause="relative")
        if boundary.endswith(","):
            name = cl.parenthetical_head(
                s, len(boundary) - 1, r.mentions, lambda at: _clause_start(s, at, r.mentions)
            )
            if name is None:
                return None
            span = (name.start, name.end)
            return _Subject([span], check_from=clause_start, clause="parenthetical")
        if word and word.group(1).lower() in {"and", "but"}:
            if previous is not None:
                spans, is_self = previous.spans, previous.is_self
                return _Subject(spans, is_self, check_from=clause_start, clause="carried")
            first = r.mentions[0] if r.mentions else None
            if first is not None and all(w in cl.LEADING for w in _words(s[: first.start])):
                span = (first.start, first.end)
                return _Subject([span], check_from=clause_start, clause="carried")
        return None

    def _capitalised_subject(self, r: _Reading, phrase: _Phrase, clause: str, clause_start: int):
        s = r.sentence
        run = cl.name_run(clause.rstrip(), clause_start, from_end=True)
        if run is None:
            return None
        # The first word of a sentence is capitalised anyway: alone, it is not a name.
        if run[0] == 0 and len(WORD.findall(s[run[0] : run[1]])) == 1:
            word = s[run[0] : run[1]]
            if not (word.isupper() or any(c.isdigit() for c in word)):
                return None
        if not _clean_gap(s[run[1] : phrase.start]) or cl.possessor(s, run[1]):
            return None
        if cl.after_preposition(s, run[0], clause_start):
            return None
        return _Subject([run], check_from=run[1])

    def _objects(self, r: _Reading, phrase: _Phrase, antecedent: Mention | None):
        s = r.sentence
        tail = s[phrase.end :]
        if tail.lstrip()[:1] == ":":  # a field label "Requires: A, B." or "X owns: A, B."
            return cl.colon_items(s, phrase.end + tail.index(":") + 1, r.mentions)
        after = [m for m in r.mentions if m.start >= phrase.end]
        head = s[phrase.end : after[0].start] if after else tail
        if after and COLON_LEAD.match(head):  # "needs three things: A, a closed till, B"
            return cl.colon_items(s, phrase.end + head.index(":") + 1, r.mentions)
        cut = CLAUSE_PUNCT.search(head)
        head_words = _words(head[: cut.start()] if cut else head)
        if set(head_words[:MAX_GAP_WORDS]) & NEGATIONS:
            return []  # "requires no sign-off from QA"
        if head_words[:1] == ["to"] and head_words[1:2] and head_words[1] not in cl.LEADING:
            return []  # "manages to keep …": an infinitive, not an object
        if head_words[:1] == ["it"] and cl.pronoun_object_ends(s, phrase.end):
            at = s.index("it", phrase.end) if "it" in s[phrase.end :] else -1
            return [(at, at + 2)] if at >= 0 else []  # "…, and the crew maintains it"
        if after and _clean_object_gap(head) and not r.phrase_between(phrase.end, after[0].start):
            return self._list(r, phrase.end)
        if antecedent is not None and self._nothing_follows(r, phrase):
            return [(antecedent.start, antecedent.end)]  # "the risk assessment that X requires"
        rest = tail
        cut = CLAUSE_PUNCT.search(rest)
        rest = rest[: cut.start()] if cut else rest
        run = cl.name_run(rest, phrase.end, from_end=False)
        if run is None or cl.possessor(s, run[1]) or not cl.ends_noun_phrase(s, run[1]):
            return []  # "the DSM's calls", "the 1962 extension": the name modifies a noun
        if not _clean_object_gap(s[phrase.end : run[0]]):
            return []
        return [run]

    @staticmethod
    def _nothing_follows(r: _Reading, phrase: _Phrase) -> bool:
        rest = r.sentence[phrase.end :].lstrip()
        if not rest or rest[0] in ",.;:)!?":
            return True
        nxt = cl.next_word(r.sentence, phrase.end)
        if nxt is not None and cl.stranded(r.sentence, phrase, nxt):
            return True  # "the register, which Maximo relies on for asset IDs, …"
        return nxt is not None and (nxt[0] in CLAUSE_WORDS or r.verb_follows(phrase.end))

    @staticmethod
    def _list(r: _Reading, start: int) -> list[tuple[int, int]]:
        """The name after ``start`` and those coordinated with it, each ending its noun
        phrase ("…, and the Rigging Crew keeps …" ends the list before the Rigging Crew)."""
        s = r.sentence
        after = [m for m in r.mentions if m.start >= start]
        if not after:
            return []
        first = after[0]
        small_clause = cl.small_clause_follows(s, first.end)  # "relies on X being restocked"
        small_clause = small_clause or cl.temporal_clause(s, start, first)  # "after X is signed"
        if cl.possessor(s, first.end) or (r.verb_follows(first.end) and not small_clause):
            return []  # "the DSM's calls"; "requires that the TD is …"
        if not small_clause and not cl.object_ends(s, first.end):
            return []  # "follows the Playout Preparation checklist": the name modifies a noun
        spans = [(first.start, first.end)]
        for prev, nxt in zip(after, after[1:], strict=False):
            if not COORDINATION.match(s[prev.end : nxt.start]):
                break
            if cl.possessor(s, nxt.end) or not cl.ends_noun_phrase(s, nxt.end):
                break
            spans.append((nxt.start, nxt.end))
        return spans
