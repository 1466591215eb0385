"""The local extractor: the bank's relation phrases matched in prose, no network, no model.

For each sentence of an entry's title and content, every relation phrase of the vocabulary
(``EdgeType.phrases``, and ``inverse_phrases`` read the other way round) is found; its
subject is the name of the bank just before it and its objects the names just after it
("requires the Tooling Register and the Parts Catalogue" gives two). Where no name of the bank
stands there, a capitalised noun phrase is kept as a surface form, to be resolved (or left
unresolved) by validation. A subject pronoun ("It", "This step") stands for the entry itself.

It states only what the sentence says holds now, and nothing is inferred across sentences:

- a negation in the clause of the phrase ("is not owned by", "requires no sign-off") drops it;
- a hypothesis, plan or hedge anywhere in the sentence ("if", "would", "could", "may", "will",
  "is planned to", a question) drops the whole sentence: the main clause of "If the lift is
  down, porters require the stairs" is no more true now than its condition;
- so does a history cue ("used to", "no longer", "formerly", "before 2022"): the sentence
  tells what was. A replacement stated as a past fact ("X replaced Y in 2021") is kept.

Cue words are read outside the bank's names ("Flight Plan" is a name, not a plan). The cue
lists are set on ``bench/data/extraction_airline.json`` and ``extraction_hospital.json`` and
reported on the blind ``bench/data/blind/extraction_food_distribution.json``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from graph.ingest.extract.base import Statement, Vocabulary
from graph.ingest.extract.mentions import Mention, MentionIndex
from kb.models import Entry

SENTENCE = re.compile(r"[^\n]+?(?:[.!?](?=\s|$)|$)", re.MULTILINE)
WORD = re.compile(r"[^\W_][\w'’./&-]*", re.UNICODE)
CLAUSE_PUNCT = re.compile(r"[,;:()\[\]]")
CLAUSE_WORDS = {
    "which", "that", "who", "when", "where", "while", "if", "because", "so", "then", "but",
    "and", "or", "before", "after", "once", "until", "unless", "whereas",
}  # fmt: skip
NEGATIONS = {"not", "never", "no", "nor", "neither", "without", "longer", "cannot", "n't"}
HEDGES = {"may", "might", "could", "perhaps", "possibly", "probably", "sometimes"}
# Words that make the whole sentence a hypothesis, a plan or a hedge (not a fact of now).
HYPOTHESIS = HEDGES | {
    "if", "unless", "whether", "would", "will", "shall", "wo", "suppose", "supposing",
    "assuming", "hypothetically", "planned", "plans", "proposed", "proposes", "propose",
    "proposal", "intends", "intend", "intended", "someday", "eventually",
}  # fmt: skip
# Phrases that make the sentence history: what held, not what holds.
HISTORY = re.compile(
    r"\b(?:used\s+to|no\s+longer|any\s*more|formerly|previously|originally|once\s+was|"
    r"in\s+the\s+past|at\s+one\s+time|until\s+(?:recently|last|(?:19|20)\d\d)|"
    r"(?:before|prior\s+to)\s+(?:(?:19|20)\d\d|the\s+(?:merger|migration|move|upgrade)))\b",
    re.I,
)
CONTRACTED_WILL = re.compile(r"\w'll\b|\w’ll\b", re.I)
PRONOUNS = {"it", "this"}  # "they" is plural: never the entry itself
SELF_NOUNS = {
    "service", "step", "process", "team", "policy", "role", "system", "entry", "document",
    "task", "check", "form", "procedure", "tool", "job", "record", "unit", "component",
}  # fmt: skip
LEADING = {"the", "a", "an", "our", "its", "their", "each", "every", "any", "all", "both"}
NAME_JOINERS = {"of", "for", "&", "de", "-"}
MAX_GAP_WORDS = 3
MAX_NAME_WORDS = 6
COORDINATION = re.compile(r"^\s*(?:,\s*(?:and|or)?|and|or|as well as)\s+(?:the\s+|a\s+|an\s+)?$")
PRIOR = 0.9


@dataclass(frozen=True)
class _Phrase:
    start: int
    end: int
    relation: str
    inverse: bool
    phrase: str


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
    return [w.lower().strip(".") for w in WORD.findall(text)]


def _name_like(word: str) -> bool:
    return word[:1].isupper() or word[:1].isdigit() or (len(word) > 1 and word.isupper())


class PhraseMatcher:
    """Every relation phrase of a vocabulary, as one matcher (longest phrase wins)."""

    def __init__(self, vocabulary: Vocabulary):
        entries = []
        for rel in vocabulary.relations.values():
            for phrase, inverse in [(p, False) for p in rel.phrases] + [
                (p, True) for p in rel.inverse_phrases
            ]:
                words = phrase.lower().split()
                if not words:
                    continue
                pattern = r"\s+".join(re.escape(w) for w in words)
                # A bank's own type wins a phrase over a core type (it is the more specific).
                rank = (len(phrase), rel.bank_defined)
                entries.append(
                    (
                        rank,
                        re.compile(rf"(?<![\w-]){pattern}(?![\w-])", re.I),
                        rel.name,
                        inverse,
                        phrase,
                    )
                )
        entries.sort(key=lambda e: e[0], reverse=True)
        self._entries = entries

    def find(self, sentence: str, mentions: list[Mention]) -> list[_Phrase]:
        taken: list[tuple[int, int]] = [(m.start, m.end) for m in mentions]
        found = []
        for _, regex, relation, inverse, phrase in self._entries:
            for m in regex.finditer(sentence):
                if any(m.start() < e and s < m.end() for s, e in taken):
                    continue  # inside a name of the bank, or another phrase
                taken.append((m.start(), m.end()))
                found.append(_Phrase(m.start(), m.end(), relation, inverse, phrase))
        return sorted(found, key=lambda p: p.start)


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


def _name_run(text: str, offset: int, *, from_end: bool) -> tuple[int, int] | None:
    """The run of name-like words at the end (or the start) of ``text``: offsets in the
    sentence (``offset`` is where ``text`` starts), or None."""
    words = list(WORD.finditer(text))
    if from_end:
        run = []
        for m in reversed(words):
            w = m.group()
            if _name_like(w) or (run and w.lower() in NAME_JOINERS):
                run.insert(0, m)
            else:
                break
    else:
        i = 0
        while i < len(words) and words[i].group().lower() in LEADING and i < MAX_GAP_WORDS:
            i += 1
        run = []
        for m in words[i:]:
            w = m.group()
            if _name_like(w) or (run and w.lower() in NAME_JOINERS):
                run.append(m)
            else:
                break
    while run and run[-1].group().lower() in NAME_JOINERS:
        run.pop()
    while run and run[0].group().lower() in NAME_JOINERS:
        run.pop(0)
    if not run or len(run) > MAX_NAME_WORDS:
        return None
    end = run[-1].end()
    return offset + run[0].start(), offset + end - (1 if text[end - 1] == "." else 0)


def _outside_names(sentence: str, mentions: list[Mention]) -> str:
    """The sentence with the bank's names blanked out (their words are never cues)."""
    chars = list(sentence)
    for m in mentions:
        chars[m.start : m.end] = " " * (m.end - m.start)
    return "".join(chars)


def not_a_present_fact(sentence: str, mentions: list[Mention]) -> bool:
    """True when the sentence is a question, a hypothesis, a plan, a hedge or history."""
    text = _outside_names(sentence, mentions)
    if sentence.rstrip().endswith("?") or HISTORY.search(text) or CONTRACTED_WILL.search(text):
        return True
    return bool(set(_words(text)) & HYPOTHESIS)


def _negated_after(sentence: str, phrase: _Phrase, mentions: list[Mention]) -> bool:
    """A negation between the phrase and the end of its clause ("is owned by no one")."""
    rest = _outside_names(sentence, mentions)[phrase.end :]
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

    def __init__(self, index: MentionIndex):
        self.index = index
        self._matcher: PhraseMatcher | None = None
        self._vocabulary: Vocabulary | None = None

    def extract(self, entry: Entry, vocabulary: Vocabulary) -> list[Statement]:
        if self._vocabulary is not vocabulary:
            self._matcher, self._vocabulary = PhraseMatcher(vocabulary), vocabulary
        out = []
        for text in (entry.title, entry.content):
            for start, end in sentences(text):
                out.extend(self.read_sentence(text[start:end]))
        return out

    def read_sentence(self, sentence: str) -> list[Statement]:
        mentions = self.index.find(sentence)
        if not_a_present_fact(sentence, mentions):
            return []
        out = []
        for phrase in self._matcher.find(sentence, mentions):
            subject = self._subject(sentence, phrase, mentions)
            if subject is None:
                continue
            (s_start, s_end), from_self = subject
            gap = sentence[s_end : phrase.start] if not from_self else ""
            if set(_words(gap)) & (NEGATIONS | HEDGES):
                continue
            clause = sentence[_clause_start(sentence, phrase.start, mentions) : phrase.start]
            if set(_words(clause)) & NEGATIONS or _negated_after(sentence, phrase, mentions):
                continue
            for o_start, o_end in self._objects(sentence, phrase, mentions):
                a, b = sentence[s_start:s_end], sentence[o_start:o_end]
                a_self, b_self = from_self, False
                if phrase.inverse:  # "X is required by Y": Y requires X
                    a, b, a_self, b_self = b, a, b_self, a_self
                out.append(
                    Statement(
                        span=sentence,
                        relation=phrase.relation,
                        from_text=a,
                        to_text=b,
                        prior=PRIOR,
                        from_self=a_self,
                        to_self=b_self,
                        basis=f"phrase:{phrase.phrase}",
                    )
                )
        return out

    def _subject(self, sentence: str, phrase: _Phrase, mentions: list[Mention]):
        before = [m for m in mentions if m.end <= phrase.start]
        clause_start = _clause_start(sentence, phrase.start, mentions)
        if before and before[-1].start >= clause_start:
            m = before[-1]
            if _clean_gap(sentence[m.end : phrase.start]):
                return (m.start, m.end), False
        clause = sentence[clause_start : phrase.start]
        words = _words(clause)
        if (len(words) == 1 and words[0] in PRONOUNS) or (
            len(words) == 2 and words[0] == "this" and words[1] in SELF_NOUNS
        ):
            lead = len(clause) - len(clause.lstrip())
            return (clause_start + lead, clause_start + len(clause.rstrip())), True
        run = _name_run(clause.rstrip(), clause_start, from_end=True)
        if run is None:
            return None
        # The first word of a sentence is capitalised anyway: alone, it is not a name.
        if run[0] == 0 and len(WORD.findall(sentence[run[0] : run[1]])) == 1:
            word = sentence[run[0] : run[1]]
            if not (word.isupper() or any(c.isdigit() for c in word)):
                return None
        if not _clean_gap(sentence[run[1] : phrase.start]):
            return None
        return run, False

    def _objects(self, sentence: str, phrase: _Phrase, mentions: list[Mention]):
        after = [m for m in mentions if m.start >= phrase.end]
        head = sentence[phrase.end : after[0].start] if after else sentence[phrase.end :]
        if set(_words(head)[:MAX_GAP_WORDS]) & NEGATIONS:
            return []  # "requires no sign-off from QA"
        if after and _clean_gap(sentence[phrase.end : after[0].start]):
            spans = [(after[0].start, after[0].end)]
            for prev, nxt in zip(after, after[1:], strict=False):
                if not COORDINATION.match(sentence[prev.end : nxt.start]):
                    break
                spans.append((nxt.start, nxt.end))
            return spans
        rest = sentence[phrase.end :]
        cut = CLAUSE_PUNCT.search(rest)
        rest = rest[: cut.start()] if cut else rest
        run = _name_run(rest, phrase.end, from_end=False)
        return [run] if run else []
