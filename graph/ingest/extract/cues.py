"""Cues that a sentence does not state a present fact: the local extractor then proposes nothing.

- a negation in the clause of the phrase ("is not owned by", "requires no sign-off") drops
  that phrase (``NEGATIONS``; the extractor reads its scope);
- a hypothesis, plan or hedge anywhere in the sentence ("if", "would", "could", "may",
  "will", "is planned to", "we think", "probably", a question) drops the whole sentence: the
  main clause of "If the lift is down, porters require the stairs" is no more true now than
  its condition. So does a fronted "When …," clause (a condition: "When the system fails, the
  controller needs …"), a "when" clause after the main clause in the present ("… goes up to
  the GM when it shows a variance") — in the past it only dates an event and is kept — and a
  condition wherever it stands ("in case", "in the event", "as long as", "provided that",
  ", should X …"); "otherwise" opens a clause of its own, the conditional one. Habitual time
  scopes ("every morning", "after 22:00") are no condition;
- a restriction to some occasions ("… only on Sundays", "… only when …") drops the sentence:
  it states no standing relation;
- so does a history cue ("used to", "no longer", "formerly", "before 2022"): the sentence
  tells what was. A replacement stated as a past fact ("X replaced Y in 2021") is kept;
- so does reported speech or hearsay ("X claimed …", "according to X, …", "rumour has it
  …", "is said to"): the writer reports what someone else holds, not what holds.

A sentence of independent clauses joined by ";", ", but" or ", otherwise" is judged clause by clause
(``present_fact_clauses``): "A may be paged, but B owns C" states that B owns C; a question
mark still drops the whole sentence.

Cue words are read outside the bank's names ("Flight Plan" is a name, not a plan). The cue
lists were set on the tuning sets (``bench/data/extraction_airline.json``, ``_hospital``,
``_tuning_extra`` and the demoted ``bench/data/blind/extraction_set2/`` to ``extraction_set5/``
and ``extraction_food_distribution.json``); the blind sets are only reported (README,
"Held-out figures").
"""

from __future__ import annotations

import re
from dataclasses import replace

from graph.ingest.extract.clauses import participle
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
    r"^\W*(?:when|whenever|where|wherever|in\s+case|provided|providing|should)\b", re.I
)
# Conditions wherever they stand: the relation holds only in the case they name ("escalates
# to the GM in case …", "provided that …", "in the event of …", "as long as …").
CONDITION = re.compile(
    r"\b(?:in\s+case|in\s+the\s+event|as\s+long\s+as|so\s+long\s+as|"
    r"on\s+(?:the\s+)?condition\s+that|in\s+which\s+case|provid(?:ed|ing)\s+that)\b|"
    r"\b(?:otherwise|or\s+else)\b(?!\s+(?:known|called|named|stated|noted))|"
    r"(?:^|[,;:]\s*)provid(?:ed|ing)\s+(?!(?:by|to|for|with|in|on|at|as|via|from)\b)|"
    r"(?:^|[,;:]\s*)(?:should|were)\s+(?:(?:the|a|an|any|it|they|there|this)\b|(?-i:[A-Z])|\s\s)",
    re.I,
)
# A "when" clause after the main clause: in the present it is a condition ("goes up to the
# GM when it shows a variance"); in the past it dates an event ("replaced X when the room was
# refitted"), and after a verb of knowing or deciding it is that verb's object ("decides when
# a valve is shut"): both are kept.
WHEN = re.compile(r"\bwhen\b", re.I)
WH_COMPLEMENT = {
    "decide", "decides", "decided", "know", "knows", "knew", "clarify", "clarifies", "explain",
    "explains", "say", "says", "show", "shows", "tell", "tells", "ask", "asks", "check",
    "checks", "determine", "determines", "record", "records", "note", "notes", "specify",
    "specifies", "define", "defines", "state", "states", "confirm", "confirms", "choose",
    "chooses", "learn", "learns", "understand", "understands", "judge", "judges", "remember",
    "forget", "wonder", "see", "sees", "agree", "agrees", "indicate", "indicates", "log",
    "logs", "track", "tracks", "about", "of", "on", "to", "from", "since", "until",
}  # fmt: skip
PRESENT_AUX = {"is", "are", "has", "have", "does", "do", "can", "must", "needs", "gets", "get"}
PAST_AUX = {"was", "were", "had", "did", "went", "came", "took", "began", "became", "got"}
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
    if RESTRICTION.search(text) or fronted or REPORTED.search(text) or CONDITION.search(text):
        return True
    if any(_conditional_when(sentence, text, m.start(), m.end()) for m in WHEN.finditer(text)):
        return True
    return bool(set(_words(MONTH_MAY.sub(" ", text))) & HYPOTHESIS)


def _conditional_when(sentence: str, text: str, start: int, end: int) -> bool:
    """A "when" (at ``start``–``end`` of ``text``, the sentence with names blanked) after the
    main clause that makes it conditional: its clause is in the present (or has no verb:
    "when needed"), and it is no verb's object ("decides when")."""
    before = _words(text[:start])
    if not before or before[-1] in WH_COMPLEMENT:
        return False  # a fronted "When …" is FRONTED_CONDITION's; "decides when …" is kept
    if _inside_parenthetical(text, start):
        return False  # "X, which is used when the lift is down, is owned by Y"
    clause = _words(re.split(r"[,;:.!?](?:\s|$)", sentence[end:], maxsplit=1)[0])
    if clause[:1] and (clause[0].endswith("ed") or clause[0] in {"necessary", "needed"}):
        return True  # "when needed", "when required": a reduced condition
    for word in clause[1:]:
        if word in PRESENT_AUX:
            return True
        if word in PAST_AUX or (word.endswith("ed") and not word.endswith("eed") and len(word) > 4):
            return False
    return True


def _inside_parenthetical(text: str, at: int) -> bool:
    """Position ``at`` lies in a parenthetical between commas that a relative pronoun or a
    participle opens ("X, which is used when …, is …"): it conditions that aside only."""
    opening, closing = text.rfind(",", 0, at), text.find(",", at)
    if opening < 0 or closing < 0:
        return False
    lead = _words(text[opening + 1 : at])[:1]
    return bool(lead) and (lead[0] in {"which", "who", "whose", "that"} or participle(lead[0]))


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


# "…, otherwise …" / "…, or else …": the clause after it is conditional, the one before not.
CLAUSE_BREAK = re.compile(r";\s*|,\s*but\s+(?=\w)|,\s*(?=(?:otherwise|or\s+else)\b)", re.I)


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
