"""Cues that a sentence does not state a present fact: the local extractor then proposes nothing.

- a negation in the clause of the phrase ("is not owned by", "requires no sign-off") drops
  that phrase (``NEGATIONS``; the extractor reads its scope);
- a hypothesis, plan or hedge anywhere in the sentence ("if", "would", "could", "may",
  "will", "is planned to", "we think", "probably", a question) drops the whole sentence: the
  main clause of "If the lift is down, porters require the stairs" is no more true now than
  its condition. So does a fronted "When …," clause (a condition: "When the system fails, the
  controller needs …") — a "when" after the main clause only dates it and is kept;
- a restriction to some occasions ("… only on Sundays", "… only when …") drops the sentence:
  it states no standing relation;
- so does a history cue ("used to", "no longer", "formerly", "before 2022"): the sentence
  tells what was. A replacement stated as a past fact ("X replaced Y in 2021") is kept;
- so does reported speech or hearsay ("X claimed …", "according to X, …", "rumour has it
  …", "is said to"): the writer reports what someone else holds, not what holds.

A sentence of independent clauses joined by ";" or ", but" is judged clause by clause
(``present_fact_clauses``): "A may be paged, but B owns C" states that B owns C; a question
mark still drops the whole sentence.

Cue words are read outside the bank's names ("Flight Plan" is a name, not a plan). The cue
lists were set on the tuning sets (``bench/data/extraction_airline.json``, ``_hospital``,
``_tuning_extra`` and the demoted ``bench/data/blind/extraction_set2/``, ``extraction_set3/``
and ``extraction_food_distribution.json``); the blind sets are only reported (README,
"Held-out figures").
"""

from __future__ import annotations

import re
from dataclasses import replace

from graph.ingest.extract.clauses import words as _words
from graph.ingest.extract.mentions import Mention

NEGATIONS = {"not", "never", "no", "nor", "neither", "without", "longer", "cannot", "n't"}
HEDGES = {
    "may", "might", "could", "perhaps", "possibly", "probably", "sometimes", "maybe", "likely",
    "unlikely", "think", "believe", "seems", "seem", "presumably", "apparently", "supposedly",
    "reportedly", "ideally",
}  # fmt: skip
# Words that make the whole sentence a hypothesis, a plan or a hedge (not a fact of now).
HYPOTHESIS = HEDGES | {
    "if", "unless", "whether", "would", "will", "shall", "wo", "suppose", "supposing", "whenever",
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
# A relation restricted to some occasions or conditions holds on those only.
RESTRICTION = re.compile(
    r"\bonly\s+(?:on|when|whenever|if|during|while|at|until|between|once|in\s+case)\b", re.I
)
# Reported speech and hearsay: the clause is someone's claim, not the writer's statement.
REPORTED = re.compile(
    r"\b(?:claim(?:s|ed)?|alleg(?:e|es|ed|edly)|rumou?r(?:s|ed)?|according\s+to|"
    r"says|said|told|tells|reckons?|insists?|insisted|heard|hearsay|"
    r"(?:is|are|was|were)\s+(?:said|thought|believed|rumou?red|reported)\s+to)\b",
    re.I,
)
FRONTED_CONDITION = re.compile(
    r"^\W*(?:when|whenever|where|wherever|in\s+case|provided|should)\b", re.I
)
# "in May", "since May 2024": the month, not the modal (capitalised, not the first word).
MONTH_MAY = re.compile(r"(?<=\S)(\s+)May\b")
CONTRACTED_WILL = re.compile(r"\w'll\b|\w’ll\b", re.I)


def outside_names(sentence: str, mentions: list[Mention]) -> str:
    """The sentence with the bank's names blanked out (their words are never cues)."""
    chars = list(sentence)
    for m in mentions:
        chars[m.start : m.end] = " " * (m.end - m.start)
    return "".join(chars)


def not_a_present_fact(sentence: str, mentions: list[Mention]) -> bool:
    """True when the sentence is a question, a hypothesis, a plan, a hedge, a restriction to
    some occasions or history."""
    text = outside_names(sentence, mentions)
    if sentence.rstrip().endswith("?") or HISTORY.search(text) or CONTRACTED_WILL.search(text):
        return True
    fronted = FRONTED_CONDITION.search(sentence) and not any(m.start == 0 for m in mentions)
    if RESTRICTION.search(text) or fronted or REPORTED.search(text):
        return True
    return bool(set(_words(MONTH_MAY.sub(" ", text))) & HYPOTHESIS)


# Manner adverbials of compliance: "follows the plan to the letter" obeys it.
COMPLIANCE = re.compile(
    r"^\s*(?:to\s+the\s+letter|strictly|closely|faithfully|religiously|exactly|"
    r"as\s+written|word\s+for\s+word|without\s+deviation)\b",
    re.I,
)


def obeys(sentence: str, phrase, object_end: int) -> bool:
    """ "follow X to the letter / strictly": *follow* means obey, not come after."""
    verb = sentence[phrase.start : phrase.end].split()[0].lower()
    return verb.startswith("follow") and bool(COMPLIANCE.match(sentence[object_end:]))


CLAUSE_BREAK = re.compile(r";\s*|,\s*but\s+(?=\w)", re.I)


def present_fact_clauses(sentence: str, mentions: list[Mention]) -> list[tuple[int, int]]:
    """The spans of the sentence's independent clauses (split at ";" and ", but") that state
    a present fact; none for a question."""
    if sentence.rstrip().endswith("?"):
        return []
    cuts = [0] + [m.end() for m in CLAUSE_BREAK.finditer(sentence)] + [len(sentence) + 1]
    spans = []
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        inside = [m for m in mentions if lo <= m.start and m.end <= hi]
        shifted = [replace(m, start=m.start - lo, end=m.end - lo) for m in inside]
        if not not_a_present_fact(sentence[lo:hi], shifted):
            spans.append((lo, hi))
    return spans
