"""The relation phrases of a vocabulary, found in a sentence with their verb forms.

Each phrase of ``EdgeType.phrases`` (and ``inverse_phrases``, read the other way round) is
matched as written and in the forms English gives it:

- the plural (base) form where it is a finite verb ("the riggers need", "are owned by");
- a passive without "is" after "X," or "X:" ("The archive, run by Engineering, …");
- the present perfect of a passive ("has been superseded by"): a state that still holds;
- the simple past of a passive ("was superseded by") only for a relation whose own phrases
  are in the past ("replaced", "was replaced by"): such a relation states an event, so its
  past is a fact; for any other relation the past is history and is not read;
- an adverb after the auxiliary ("are both owned by", "is also needed by");
- an adverbial between a passive participle and "by" ("is managed day to day by");
- any article and an ordinal for "is a <noun> of/in" ("is the first step in");
- the passive of an active phrase, read the other way round ("looks after" → "is looked
  after by"), when the vocabulary does not state it itself;
- a verb shared by two prepositions ("comes after A and before B"): the second preposition
  with the first one's verb, when that makes a phrase of the vocabulary (ellipsis);
- a requirement stated as what cannot happen without the other ("X can't be granted
  without Y", "X cannot start until Y is connected"): read as the vocabulary's requirement
  relation (the one with "requires", "needs", "depends on" or "relies on"), whatever verb
  stands between (up to four lower-case words).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from graph.ingest.extract import clauses as cl
from graph.ingest.extract.base import Vocabulary
from graph.ingest.extract.mentions import Mention

# A plural (base) form is no finite verb after these: "to own", "does not need", "their own".
NOT_FINITE_BEFORE = cl.AUXILIARIES | cl.DETERMINERS | cl.PREPOSITIONS | {
    "no", "any", "each", "every", "this", "these", "those", "let", "help", "make",
}  # fmt: skip
AUX_FIRST = {"is", "are", "was", "were", "has", "have"}
# An adverb between the auxiliary and the rest of a phrase: "are both owned by", "is also
# needed by", "has since been replaced by".
INNER_ADVERB = "(?:" + "|".join(sorted(cl.ADVERBS | {"since", "jointly", "each"})) + ")"
# "is a step in" also as "is the first step in", "is an early step in".
ARTICLE = (
    r"(?:a|an|the)(?:\s+(?:first|second|third|fourth|last|final|next|main|key|initial|"
    r"early|late|later|earlier|opening|closing|only|critical|mandatory))?"
)
# An adverbial between a passive participle and its "by": "is watched around the clock by",
# "is managed day to day by" (lower-case words only, no name, no punctuation).
ADVERBIAL = (
    r"(?:(?:around|round)\s+the\s+clock|day\s+to\s+day|[a-z]+ly|(?:in|at|on|during)\s+"
    r"(?:practice|night|weekends|the\s+week|the\s+day|shift)|jointly|mainly|mostly)"
)
REQUIREMENT_PHRASES = ("requires", "needs", "depends on", "relies on")
# "cannot be done without", "can't start until": no name and no punctuation in between.
CANNOT_WITHOUT = r"(?:cannot|can['’]t|can\s+not)(?:\s+(?-i:[a-z][a-z-]*)){0,4}?\s+(?:without|until)"
# A direct object between a verb and "to" ("escalates linen shortages to": a verb of passing
# on keeps its sense with an object): one to three lower-case words, no name (names are never
# inside a phrase), no punctuation, no negation (a negation inside would not be read as one)
# and no particle or preposition: "refers complaints up to" is another verb than "refers to".
# Before any other preposition only an adverbial may stand ("relies heavily on", "happens the
# morning before"): "builds the schedule on" is another verb than "builds on".
SPLIT_STOP = sorted(
    cl.PREPOSITIONS
    | {"not", "no", "never", "nothing", "none", "nobody", "without", "and", "or", "but"}
    | {"up", "out", "over", "back", "off", "down", "away", "along", "round", "after", "before"}
)
SPLIT_OBJECT = r"(?:\s+(?!(?:" + "|".join(SPLIT_STOP) + r")\b)(?-i:[a-z][a-z-]*)){1,3}"
SPLIT_PREPOSITIONS = {"to", "on", "from", "with", "after", "before", "for", "into", "up"}
SPLIT_ADVERBIAL = (
    r"(?:\s+(?:" + "|".join(sorted(cl.ADVERBS)) + r"|(?-i:[a-z]+ly))){1,2}|"
    r"\s+(?:the|a|an|each|every)\s+(?:morning|day|night|evening|week|weekend|shift|month)"
)


def split_verb(words: list[str]) -> bool:
    """A two-word phrase of a verb and its preposition, which a direct object may split."""
    return (
        len(words) == 2
        and words[0] not in AUX_FIRST | cl.AUXILIARIES
        and words[1] in SPLIT_PREPOSITIONS
    )


ELLIPSIS = re.compile(r"\s*,?\s*(?:and|or|but)\s+(?:also\s+|then\s+)?([a-z]+)\b", re.I)


@dataclass(frozen=True)
class Phrase:
    start: int
    end: int
    relation: str
    inverse: bool
    phrase: str
    reduced: bool = False  # a participle without its verb: "X, run by Y," / "X: owned by Y"
    plural: bool = False  # the plural form of the phrase: "the riggers need"
    elided: bool = False  # a preposition sharing the verb before it: "… and before B"


def reduced_form(phrase: str) -> str | None:
    """A passive phrase without its verb "to be": "is owned by" → "owned by", as in a reduced
    relative clause ("The archive, run by Engineering, …") or a field ("Cue Sheet: owned by
    …"); None for phrases that are not "is/are" + a participle."""
    parts = phrase.split()
    if len(parts) < 3 or parts[0].lower() not in {"is", "are", "was", "were"}:
        return None
    word = parts[1].lower()
    if not (word.endswith(("ed", "en")) or word in cl.IRREGULAR_PARTICIPLES):
        return None
    return " ".join(parts[1:])


def perfect_forms(phrase: str, eventive: bool) -> list[str]:
    """ "is superseded by" → "has been superseded by" (and "have been …"); with ``eventive``
    also "was superseded by" / "were …"."""
    reduced = reduced_form(phrase)
    if reduced is None or phrase.split()[0].lower() != "is":
        return []
    forms = [f"has been {reduced}", f"have been {reduced}"]
    return forms + ([f"was {reduced}", f"were {reduced}"] if eventive else [])


def eventive(phrases: list[str]) -> bool:
    """A relation stated in the past by its own vocabulary ("replaced", "was replaced by")."""
    firsts = {p.split()[0].lower() for p in phrases if p.split()}
    return bool(firsts & {"was", "were"}) or any(
        w.endswith("ed") and w not in {"need", "feed", "succeed", "exceed"} for w in firsts
    )


IRREGULAR_PAST = {
    "runs": "run", "holds": "held", "keeps": "kept", "leads": "led", "feeds": "fed",
    "makes": "made", "sets": "set", "writes": "written", "gives": "given", "sends": "sent",
    "takes": "taken", "builds": "built", "oversees": "overseen", "sees": "seen",
}  # fmt: skip


def passive_form(phrase: str) -> str | None:
    """The passive of an active phrase, read the other way round: "watches" → "is watched
    by", "looks after" → "is looked after by"; None for a phrase with no object verb."""
    first, _, rest = phrase.lower().partition(" ")
    if first in IRREGULAR_PAST:
        participle = IRREGULAR_PAST[first]
    elif len(first) < 4 or not first.endswith("s") or first.endswith(("ss", "us")):
        return None
    elif first in {"is", "has", "does", "was"}:
        return None
    elif first.endswith("ies"):
        participle = first[:-3] + "ied"
    elif first.endswith(("sses", "shes", "ches", "xes", "zes")):
        participle = first[:-2] + "ed"
    elif first.endswith("es") and not first.endswith(("ees", "oes")):
        participle = first[:-1] + "d"
    else:
        participle = first[:-1] + "ed"
    if rest and not all(w in cl.PREPOSITIONS | {"after", "up", "off", "out"} for w in rest.split()):
        return None  # "keeps an eye on": no plain passive
    return " ".join(["is", participle, *rest.split(), "by"])


def plural_form(phrase: str) -> str | None:
    """The phrase with its first word in the plural (base) form: "requires" → "require",
    "relies on" → "rely on", "is owned by" → "are owned by"; None when it has none."""
    first, _, rest = phrase.partition(" ")
    low = first.lower()
    irregular = {"is": "are", "was": "were", "has": "have", "does": "do"}
    if low in irregular:
        base = irregular[low]
    elif len(low) < 4 or not low.endswith("s") or low.endswith(("ss", "us")):
        return None
    elif low.endswith("ies"):
        base = low[:-3] + "y"
    elif low.endswith(("sses", "shes", "ches", "xes", "zes")):
        base = low[:-2]
    else:
        base = low[:-1]
    return f"{base} {rest}".strip()


# Common English wordings of two relation classes that banks' phrase lists tend to leave out,
# set on the tuning sets (each one is in at least one of them, none added a wrong reading;
# "runs" / "is run by" found 3 on water but read a hotel trap where "run by" is not "owned
# by"; "is built from" / "is compiled from" found nothing): a
# relation gets them when its own phrases show its class ("is owned by" / "owns"; "requires"),
# and only those no relation of the vocabulary states itself.
CLASS_SYNONYMS = {
    ("is owned by", "owns"): [
        ("is held by", False), ("is kept by", False), ("is the custodian of", True),
    ],
    ("requires", "needs"): [("leans on", False)],
}  # fmt: skip


def class_synonyms(vocabulary: Vocabulary) -> dict[str, list[tuple[str, bool]]]:
    """Relation name → the synonyms of its class it gets (``CLASS_SYNONYMS``)."""
    stated = {
        p.lower()
        for rel in vocabulary.relations.values()
        for p in rel.phrases + rel.inverse_phrases
    }
    out: dict[str, list[tuple[str, bool]]] = {}
    for (anchor, inverse_anchor), synonyms in CLASS_SYNONYMS.items():
        for rel in vocabulary.relations.values():
            own = {p.lower() for p in rel.phrases}
            if anchor in own or inverse_anchor in {p.lower() for p in rel.inverse_phrases}:
                out[rel.name] = [(p, inv) for p, inv in synonyms if p not in stated]
                break
    return out


def requirement(vocabulary: Vocabulary) -> str | None:
    """The relation a requirement is stated with: the one with a requirement phrase."""
    for wanted in REQUIREMENT_PHRASES:
        for rel in vocabulary.relations.values():
            if wanted in (p.lower() for p in rel.phrases):
                return rel.name
    return None


class PhraseMatcher:
    """Every relation phrase of a vocabulary, as one matcher (longest phrase wins)."""

    def __init__(self, vocabulary: Vocabulary):
        entries = []
        self._pairs: dict[tuple[str, str], tuple[str, bool, str]] = {}
        extra = class_synonyms(vocabulary)
        for rel in vocabulary.relations.values():
            past = eventive(list(rel.phrases) + list(rel.inverse_phrases))
            for phrase, inverse in (
                [(p, False) for p in rel.phrases]
                + [(p, True) for p in rel.inverse_phrases]
                + extra.get(rel.name, [])
            ):
                forms = [
                    (phrase, ""),
                    (plural_form(phrase), "plural"),
                    (reduced_form(phrase), "reduced"),
                ] + [(f, "") for f in perfect_forms(phrase, past)]
                own = {p.lower() for p in list(rel.phrases) + list(rel.inverse_phrases)}
                passive = passive_form(phrase)
                if passive and passive not in own:  # "looks after" → "is looked after by"
                    forms_other = [(passive, ""), (plural_form(passive), "plural")]
                    forms_other += [(reduced_form(passive), "reduced")]
                    for form, variant in forms_other:
                        self._add(entries, form, variant, rel, not inverse, phrase)
                for form, variant in forms:
                    self._add(entries, form, variant, rel, inverse, phrase)
        need = requirement(vocabulary)
        if need is not None:  # "X cannot start without Y": X requires Y
            regex = re.compile(rf"(?<![\w-]){CANNOT_WITHOUT}(?![\w-])", re.I)
            entries.append(((12, False, False), regex, need, False, "cannot … without", "", "can"))
        entries.sort(key=lambda e: e[0], reverse=True)
        self._entries = entries

    def _add(self, entries, form, variant, rel, inverse, phrase) -> None:
        words = (form or "").lower().split()
        if not words:
            return
        if len(words) == 2 and variant != "reduced":
            self._pairs.setdefault((words[0], words[1]), (rel.name, inverse, phrase))
        if split_verb(words) and variant in ("", "plural"):  # "escalates faults to"
            regex = re.compile(
                rf"(?<![\w-]){re.escape(words[0])}"
                rf"(?:{SPLIT_OBJECT if words[1] == 'to' else SPLIT_ADVERBIAL})"
                rf"\s+{re.escape(words[1])}(?![\w-])",
                re.I,
            )
            rank = (0, rel.bank_defined, False)
            entries.append((rank, regex, rel.name, inverse, phrase, variant, words[0]))
        pattern = r"\s+".join(re.escape(w) for w in words)
        if len(words) > 3 and words[1] in {"a", "an"}:  # "is the first step in"
            rest = r"\s+".join(re.escape(w) for w in words[2:])
            pattern = rf"{re.escape(words[0])}\s+{ARTICLE}\s+{rest}"
        elif words[0] in AUX_FIRST and len(words) > 1:  # "are both owned by"
            rest = r"\s+".join(re.escape(w) for w in words[1:])
            if words[-1] == "by" and len(words) >= 3:  # "is managed day to day by"
                middle = r"\s+".join(re.escape(w) for w in words[1:-1])
                rest = rf"{middle}(?:\s+{ADVERBIAL})?\s+by"
            pattern = rf"{re.escape(words[0])}(?:\s+{INNER_ADVERB})?\s+{rest}"
        # A bank's own type wins a phrase over a core type (the more specific).
        rank = (len(form), rel.bank_defined, not variant)
        regex = re.compile(rf"(?<![\w-]){pattern}(?![\w-])", re.I)
        entries.append((rank, regex, rel.name, inverse, phrase, variant, words[0]))

    def find(self, sentence: str, mentions: list[Mention]) -> list[Phrase]:
        taken: list[tuple[int, int]] = [(m.start, m.end) for m in mentions]
        found = []
        lowered = sentence.lower()
        for _, regex, relation, inverse, phrase, variant, needle in self._entries:
            if needle not in lowered:
                continue  # the phrase's first word is nowhere in the sentence
            for m in regex.finditer(sentence):
                if any(m.start() < e and s < m.end() for s, e in taken):
                    continue  # inside a name of the bank, or another phrase
                before = sentence[: m.start()]
                if variant == "plural" and (cl.words(before)[-1:] or [""])[0] in NOT_FINITE_BEFORE:
                    continue  # "to own", "does not need", "their own": not a finite verb
                if variant == "reduced" and before.rstrip()[-1:] not in (",", ":"):
                    if before.strip(" -•*\t"):  # "Owned by X: A, B" opens a label list
                        continue  # "the booth owned by …" is read only after "X," or "X:"
                taken.append((m.start(), m.end()))
                found.append(
                    Phrase(
                        m.start(),
                        m.end(),
                        relation,
                        inverse,
                        phrase,
                        reduced=variant == "reduced",
                        plural=variant == "plural",
                    )
                )
        found += self.elided(sentence, found, taken)
        return sorted(found, key=lambda p: p.start)

    def elided(self, sentence: str, found: list[Phrase], taken) -> list[Phrase]:
        """ "comes after A and before B": "before" shares "comes", and "comes before" is a
        phrase of the vocabulary, so it is read as one after the name that ends A."""
        out = []
        for p in found:
            words = p.phrase.lower().split()
            text = sentence[p.start : p.end].lower().split()
            if len(words) != 2 or len(text) != 2:
                continue
            for m in ELLIPSIS.finditer(sentence, p.end):
                pair = self._pairs.get((text[0], m.group(1).lower()))
                if pair is None or m.group(1).lower() == text[1]:
                    continue
                if any(m.start(1) < e and s < m.end(1) for s, e in taken):
                    continue
                rel, inverse, phrase = pair
                taken.append((m.start(1), m.end(1)))
                out.append(Phrase(m.start(1), m.end(1), rel, inverse, phrase, elided=True))
        return out
