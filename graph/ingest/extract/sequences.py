"""Sequences stated without a relation phrase: the order of steps read from the shape of
the sentence, for a vocabulary that has a ``precedes`` relation.

- **A list ordered by "then"**: "First A, then B, then C." and "The order is A, B, then C."
  give A precedes B and B precedes C. Only a bare list counts: between two names stand
  nothing but a comma, "then", "and then" or "first". A list introduced as a sequence needs
  no "then" ("Turnover sequence: A, B, C.", "in this order: A, B").
- **A fronted "After/Once X," clause**: "After X, the crew does Y." gives X precedes Y when
  the fronted clause names one thing and the main clause names its object after its own
  subject and verb ("the operator does a residual check"), with no negation in it.

The cues (``cues``) still apply: a hypothesis or history sentence gives nothing.
"""

from __future__ import annotations

import re

from graph.ingest.extract import clauses as cl
from graph.ingest.extract.mentions import Mention

RELATION = "precedes"
LIST_LINK = re.compile(r"^\s*(?:,\s*)?(?:and\s+)?(?:then|next|finally)?\s*(?:the\s+)?$", re.I)
# A label that introduces a list as a sequence, right before the list's first name.
ORDER_LABEL = re.compile(
    r"\b(?:sequence|in\s+(?:this|that|the\s+following)\s+order)\b[^.;:,]*:\s*(?:the\s+)?$",
    re.I,
)
FRONTED_AFTER = re.compile(r"^\W*(?:after|once|following)\s", re.I)
NEGATIONS = {"not", "never", "no", "nobody", "none", "nothing", "n't", "cannot", "without"}


NOT_A_VERB = cl.PREPOSITIONS | {
    "is", "are", "was", "were", "be", "been", "being", "not", "and", "or", "nor", "but", "than",
    "as", "until", "before", "after", "since", "while", "when",
}  # fmt: skip


def _bare(sentence: str, start: int) -> bool:
    """No punctuation between the name at ``start`` and the word before it (determiners
    skipped): "approves the X", not "…, the X"."""
    before = re.sub(r"(?:\b(?:the|a|an|its|their|our)\s+)+$", "", sentence[:start], flags=re.I)
    return before.rstrip()[-1:].isalpha()


def labelled_order(sentence: str, start: int) -> bool:
    """The list starting at ``start`` is introduced as a sequence ("Turnover sequence: A, B,
    C", "Do these in this order: A, B")."""
    return bool(ORDER_LABEL.search(sentence[:start]))


def then_list(sentence: str, mentions: list[Mention]) -> list[tuple[Mention, Mention]]:
    """Consecutive names of a list ordered by "then", or introduced as a sequence: each
    precedes the next."""
    out: list[tuple[Mention, Mention]] = []
    run = [mentions[0]] if mentions else []
    ordered = bool(run) and labelled_order(sentence, run[0].start)
    for prev, nxt in zip(mentions, mentions[1:], strict=False):
        gap = sentence[prev.end : nxt.start]
        if LIST_LINK.match(gap) and ("," in gap or "then" in gap.lower()):
            run.append(nxt)
            ordered = ordered or "then" in gap.lower()
            continue
        if ordered and len(run) > 1:
            out += list(zip(run, run[1:], strict=False))
        run, ordered = [nxt], labelled_order(sentence, nxt.start)
    if ordered and len(run) > 1:
        out += list(zip(run, run[1:], strict=False))
    if out and not _list_ends(sentence, run[-1].end if run else 0):
        return []
    return out


def _list_ends(sentence: str, end: int) -> bool:
    rest = sentence[end:].strip()
    return not rest or rest[0] in ".;!" or cl.ends_noun_phrase(sentence, end)


def fronted_after(sentence: str, mentions: list[Mention]) -> tuple[Mention, Mention] | None:
    """ "After X, <subject> <verb> … Y …": X precedes Y."""
    if not FRONTED_AFTER.match(sentence) or "," not in sentence:
        return None
    comma = sentence.index(",")
    fronted = [m for m in mentions if m.end <= comma]
    main = sentence[comma + 1 :]
    rest = re.split(r"[;:]|,\s*(?:but|and|so)\b", main, maxsplit=1)[0]
    hi = comma + 1 + len(rest)
    later = [m for m in mentions if comma < m.start and m.end <= hi]
    if len(fronted) != 1 or not later:
        return None
    for target in later:
        lead = [w for w in cl.words(sentence[comma + 1 : target.start]) if w not in cl.LEADING]
        # a verb right before it ("approves the X"), not ", not the X," nor "X and the Y"
        if len(lead) >= 2 and lead[-1] not in NOT_A_VERB and _bare(sentence, target.start):
            break
    else:
        return None  # every name is the main clause's subject: no verb stands before it
    last_comma = sentence.rfind(",", comma + 1, target.start)
    if set(cl.words(sentence[max(last_comma, comma) + 1 : hi])) & NEGATIONS:
        return None  # "After X, nobody does Y"
    if cl.after_preposition(sentence, target.start, comma + 1) or cl.possessor(
        sentence, target.end
    ):
        return None  # "… owned by Stage Management until …": no object of the main verb
    if not cl.object_ends(sentence, target.end):
        return None
    return fronted[0], target
