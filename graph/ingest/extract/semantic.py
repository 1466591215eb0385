"""Relations said in words of no configured phrase, matched by meaning with the bank's model.

"The WQ Lab is the owner of the Sampling Plan", "Maximo leans on the Asset Register",
"Fleetwise is looked after by Depot Engineering": two names of the bank joined by a short
predicate that matches no phrase of the vocabulary. Such a predicate is compared, with the
project's embedding model (all-MiniLM-L6-v2, the one already loaded for entries), with every
phrase and inverse phrase of the vocabulary; the nearest phrase gives the relation when its
cosine reaches ``THRESHOLD`` and beats the nearest phrase of any *other* relation by
``MARGIN``. Both were chosen by leave-one-set-out cross-validation on the tuning sets
(``bench/extraction_semantic_cv.py``; README "Relations by meaning").

Only a plain clause shape is read, so that the model decides the relation, never the pairing:

- the first name opens its clause (determiners only before it), is not a possessor and is
  not after a preposition;
- the second name is the next name of the bank, ends its noun phrase and is no possessor;
- between them stand one to ``MAX_WORDS`` words, no punctuation, no clause word ("which",
  "and", …), no negation or hedge, no phrase of the vocabulary, and the first of them is
  neither a preposition nor a determiner ("X for Y", "X and Y" state no relation);
- the clause states a present fact (the cues of ``cues`` are applied as for phrases).

The direction is the matched phrase's, turned round when the predicate's voice differs from
the phrase's ("is held by" matched with "owns": the object owns the subject). Predicates are
embedded in one batch per entry, and phrase vectors once per vocabulary.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from typing import Protocol

from graph.ingest.extract import clauses as cl
from graph.ingest.extract.base import Statement, Vocabulary
from graph.ingest.extract.cues import HEDGES, NEGATIONS
from graph.ingest.extract.mentions import Mention
from kb.services.embedding import EmbedderError

logger = logging.getLogger(__name__)

THRESHOLD = 0.50  # cosine of the predicate with its nearest phrase (LOSO-chosen)
MARGIN = 0.15  # over the nearest phrase of any other relation (LOSO-chosen)
MAX_WORDS = 6
MODEL = "all-MiniLM-L6-v2"  # the thresholds hold for this model's cosines only
PRIOR = 0.8
NOT_PREDICATE = {
    "which", "that", "who", "whom", "whose", "when", "where", "while", "if", "because", "so",
    "then", "but", "and", "or", "nor", "until", "unless", "whereas",
    "as", "than", "though", "although", "whether", "versus", "vs",
}  # fmt: skip
# Determiners and possessives a predicate may end with before the second name ("leans on the").
TRAILING = cl.LEADING | {"all", "any", "some", "each"}
# A predicate in the past or about the future states no present fact ("owned … until 2022",
# "went to", "is going to take over"): the phrase reader's cues never see such words.
NOT_PRESENT = {
    "was", "were", "had", "did", "used", "going", "planning", "supposed", "will", "would",
    "once", "formerly", "previously", "originally",
}  # fmt: skip
# A first verb in the simple past ("went to"); after "is" these are participles ("is kept by").
IRREGULAR_PAST = {
    "went", "took", "ran", "kept", "built", "made", "gave", "came", "got", "became", "left",
    "brought", "bought", "began", "held", "sent", "led", "fed",
}  # fmt: skip
PARTICLES = cl.PREPOSITIONS | {"after", "before", "up", "off", "out", "down", "over"}
GAP_PUNCT = re.compile(r"[,;:()\[\]\"“”!?]|\s[-–—]\s")


class _Embedder(Protocol):
    name: str

    def embed(self, texts: list[str]) -> list[list[float]]: ...


@dataclass(frozen=True)
class Candidate:
    """Two names joined by a predicate that no phrase matched, waiting for the model."""

    sentence: str
    subject: Mention
    object: Mention
    predicate: str  # lower-cased words between the names, trailing determiners dropped


@dataclass(frozen=True)
class Match:
    relation: str
    inverse: bool  # the object is the relation's source
    phrase: str
    cosine: float
    margin: float


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=False))


def _unit(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


def passive(words: list[str]) -> bool:
    """A predicate in the passive voice: it ends in "by" ("is looked after by", "held by")."""
    return bool(words) and words[-1] == "by"


def _simple_past(words: list[str]) -> bool:
    """ "owned", "needed": a first verb in "-ed" with no auxiliary is the simple past."""
    first = words[0]
    return first in IRREGULAR_PAST or (
        first.endswith("ed") and first not in {"need", "feed", "speed", "proceed"}
    )


def _infinitive(words: list[str]) -> bool:
    """ "is due to take over": "to" before a verb (not the predicate's last word)."""
    return any(w == "to" and i + 1 < len(words) for i, w in enumerate(words))


def candidates(
    sentence: str, mentions: list[Mention], phrase_spans: list[tuple[int, int]], facts, clause_start
) -> list[Candidate]:
    """The pairs of names the model is asked about (see the module docstring)."""
    out = []
    for a, b in zip(mentions, mentions[1:], strict=False):
        if len(a.entry_pks) != 1 or len(b.entry_pks) != 1 or a.entry_pks == b.entry_pks:
            continue
        if not any(lo <= a.start and b.end <= hi for lo, hi in facts):
            continue
        gap = sentence[a.end : b.start]
        words = cl.words(gap)
        if not words or GAP_PUNCT.search(gap) or cl.possessor(sentence, a.end):
            continue
        if any(a.end <= s and e <= b.start for s, e in phrase_spans):
            continue
        if set(words) & (NOT_PREDICATE | NEGATIONS | HEDGES) or words[0] in PARTICLES:
            continue
        if words[0] in cl.LEADING or words[0] in cl.ADVERBS - {"also", "now"}:
            continue
        while words and words[-1] in TRAILING:
            words.pop()
        if not words or len(words) > MAX_WORDS:
            continue
        if set(words) & NOT_PRESENT or _simple_past(words) or _infinitive(words):
            continue
        if len(words) > 1 and words[-1] in PARTICLES and words[-2] in PARTICLES:
            continue  # "is followed around by", "is looked after by": an idiom the model misreads
        start = clause_start(a.start)
        lead = cl.words(sentence[start : a.start])
        if not all(w in cl.LEADING for w in lead) or cl.after_preposition(sentence, a.start, start):
            continue
        if cl.possessor(sentence, b.end) or not cl.object_ends(sentence, b.end):
            continue
        out.append(Candidate(sentence, a, b, " ".join(words)))
    return out


# "X is Y's." / "X is Y's system." states that Y owns X: read as the vocabulary's first of
# these phrases (a lexical generalisation, no model).
OWNERSHIP_PHRASES = ("is owned by", "belongs to", "is the responsibility of")
POSSESSIVE_TAIL = re.compile(r"['’]s(?:\s+([a-z]+))?\s*(?:[,;.]|$)")


def ownership(vocabulary: Vocabulary) -> str | None:
    """The relation a possessive predicate states: the one with an ownership phrase."""
    for wanted in OWNERSHIP_PHRASES:
        for rel in vocabulary.relations.values():
            if wanted in (p.lower() for p in rel.phrases):
                return rel.name
    return None


def possessive_statements(
    sentence: str, mentions: list[Mention], facts, relation: str | None, clause_start
) -> list[Statement]:
    """ "The Incident Portal is SHEQ's system", "AVL is Bus Control's": the possessor owns the
    subject. Only "is/are" (and adverbs) between the names, and at most one lower-case noun
    after "'s" before the clause ends."""
    out = []
    if relation is None:
        return out
    for a, b in zip(mentions, mentions[1:], strict=False):
        if len(a.entry_pks) != 1 or len(b.entry_pks) != 1 or a.entry_pks == b.entry_pks:
            continue
        if not any(lo <= a.start and b.end <= hi for lo, hi in facts):
            continue
        gap = cl.words(sentence[a.end : b.start])
        words = [w for w in gap if w not in cl.ADVERBS | cl.DETERMINERS]
        if GAP_PUNCT.search(sentence[a.end : b.start]) or words not in (["is"], ["are"]):
            continue
        if not POSSESSIVE_TAIL.match(sentence, b.end):
            continue
        start = clause_start(a.start)
        if not all(w in cl.LEADING for w in cl.words(sentence[start : a.start])):
            continue
        out.append(
            Statement(
                span=sentence,
                relation=relation,
                from_text=sentence[a.start : a.end],
                to_text=sentence[b.start : b.end],
                prior=PRIOR,
                basis="possessive:is Y's",
            )
        )
    return out


class RelationsByMeaning:
    """The vocabulary's phrases as vectors, and predicates matched against them."""

    def __init__(self, vocabulary: Vocabulary, embedder: _Embedder):
        self.embedder = embedder
        self._phrases: list[tuple[str, bool, str, bool]] = []  # relation, inverse, text, passive
        for rel in vocabulary.relations.values():
            for text, inverse in [(p, False) for p in rel.phrases] + [
                (p, True) for p in rel.inverse_phrases
            ]:
                words = text.lower().split()
                self._phrases.append((rel.name, inverse, text.lower(), passive(words)))
        texts = [p[2] for p in self._phrases]
        self._cache: dict[str, Match | None] = {}
        try:
            self._vectors = [_unit(v) for v in embedder.embed(texts)] if texts else []
        except EmbedderError:  # the model cannot run: read by phrases alone, never fail a run
            logger.warning("extraction by meaning is off: the embedder failed", exc_info=True)
            self._vectors = []

    def match_all(self, predicates: list[str]) -> dict[str, Match | None]:
        """Each predicate's nearest phrase; the model runs once for those not seen before."""
        todo = list(dict.fromkeys(p for p in predicates if p not in self._cache))
        if todo and self._vectors:
            try:
                vectors = self.embedder.embed(todo)
            except EmbedderError:
                logger.warning("extraction by meaning skipped an entry", exc_info=True)
                return {p: self._cache.get(p) for p in predicates}
            for text, vector in zip(todo, vectors, strict=True):
                self._cache[text] = self._nearest(text, _unit(vector))
        return {p: self._cache.get(p) for p in predicates}

    def _nearest(self, text: str, vector: list[float]) -> Match | None:
        best: dict[str, tuple[float, int]] = {}
        words = text.split()
        ends_in_particle = words[-1] in PARTICLES
        for i, v in enumerate(self._vectors):
            if (self._phrases[i][2].split()[-1] in PARTICLES) != ends_in_particle:
                continue  # "builds on" is no "builds", "is run off" no "runs": a particle is meaning
            cos = _dot(vector, v)
            rel = self._phrases[i][0]
            if rel not in best or cos > best[rel][0]:
                best[rel] = (cos, i)
        if not best:
            return None
        ranked = sorted(best.values(), reverse=True)
        cos, i = ranked[0]
        margin = cos - ranked[1][0] if len(ranked) > 1 else cos
        relation, inverse, phrase, phrase_passive = self._phrases[i]
        if passive(text.split()) != phrase_passive:
            inverse = not inverse
        return Match(relation, inverse, phrase, round(cos, 4), round(margin, 4))


def statements(
    found: list[Candidate],
    matches: dict[str, Match | None],
    *,
    threshold: float = THRESHOLD,
    margin: float = MARGIN,
) -> list[Statement]:
    """A statement per candidate whose predicate's match clears the threshold and margin."""
    out = []
    for c in found:
        m = matches.get(c.predicate)
        if m is None or m.cosine < threshold or m.margin < margin:
            continue
        a = c.sentence[c.subject.start : c.subject.end]
        b = c.sentence[c.object.start : c.object.end]
        if m.inverse:
            a, b = b, a
        out.append(
            Statement(
                span=c.sentence,
                relation=m.relation,
                from_text=a,
                to_text=b,
                prior=PRIOR,
                basis=f"meaning:{c.predicate}~{m.phrase};cos={m.cosine:.3f};margin={m.margin:.3f}",
            )
        )
    return out
