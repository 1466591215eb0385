"""Edge-proposal confidence: how likely a queued proposal is right, from what the reading saw.

The score is a small logistic model over features every statement has, whatever extractor
made it (they are read from the span, the two surface forms and how validation resolved
them)::

    confidence = 1 / (1 + exp(-(INTERCEPT + Σ WEIGHTS[f] · x_f)))

- how each end was named: exactly (title, key, alias, short id), fuzzily, by a pronoun
  ("It", "This step"), or not at all (unresolved);
- the cue: whether a phrase of the relation stands between the two ends, and whether it is
  the inverse (passive) phrase;
- the distance between the ends in words, other names of the bank between them (a later
  item of a list: "requires A, B and C"), a relative or subordinating word between them or
  just before the first (the cue is then unlikely to be the main verb joining these two
  ends: "Every tray that SSD processes relies on …"), how far into the sentence the first
  end stands, the sentence's length;
- a hedge, negation, plan or history word anywhere in the span (the local extractor drops
  such sentences; a model's answer may not);
- how much the extractor trusts its own reading (``Statement.prior``: local 0.9, llm 0.8,
  gleaned 0.7).

WEIGHTS and INTERCEPT are fitted by ``bench/extraction_confidence.py --fit`` (L2-regularised
logistic regression) on the TUNING sets only: ``bench/data/extraction_airline.json`` (local
and its ``_llm`` stand-in answers), ``bench/data/extraction_hospital.json`` and
``bench/data/extraction_tuning_extra.json``. The blind set
``bench/data/blind/misc/extraction_food_distribution.json`` is only reported on.
Each proposal keeps its features and their contributions (``EdgeProposal.confidence_basis``)
so a curator sees why it scored what it did.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from graph.ingest.extract.base import Relation, Statement

# Fitted by `bench/extraction_confidence.py --fit` on the tuning sets named above (C = 1.0).
INTERCEPT = 5.72
WEIGHTS: dict[str, float] = {
    "pronoun_end": -0.31,
    "unresolved_end": -1.88,
    "no_cue": -1.02,
    "passive": 0.48,
    "gap": -1.35,
    "names_between": 0.74,
    "relative": -1.41,
    "lead": -0.89,
    "length": -0.81,
    "hedge": -1.35,
    "extractor_doubt": -0.34,
}
# Set by hand, not fitted: no tuning proposal had a fuzzily matched end. A fuzzy end is
# trusted like a pronoun end ("It" may also name the wrong entry).
HAND_SET: dict[str, float] = {"fuzzy_end": -0.31}
# What each feature means, in the words the admin shows next to its contribution.
WORDS: dict[str, str] = {
    "fuzzy_end": "an end matched fuzzily",
    "pronoun_end": "an end is “It”/“This …”",
    "unresolved_end": "an end unresolved",
    "no_cue": "no phrase of the relation between the ends",
    "passive": "inverse (passive) phrase",
    "gap": "words between the ends",
    "names_between": "a later item of a list of names",
    "relative": "a relative or subordinate clause",
    "lead": "first end far into the sentence",
    "length": "a long sentence",
    "hedge": "a hedge, negation, plan or history word",
    "extractor_doubt": "the extractor's own doubt",
}
# Bands a curator works by (the admin filter, the bulk-accept form, the bench).
BANDS = (("high", 0.8, 1.0), ("medium", 0.6, 0.8), ("low", 0.0, 0.6))
HIGH = BANDS[0][1]

WORD = re.compile(r"[^\W_][\w'’-]*", re.UNICODE)
RELATIVE = {
    "that", "which", "who", "whom", "whose", "when", "where", "while", "because", "although",
    "though", "whereas", "since", "once", "after", "before", "unless", "until",
}  # fmt: skip
DOUBT = {
    "not", "never", "no", "nor", "neither", "without", "cannot", "n't", "may", "might", "could",
    "would", "should", "perhaps", "possibly", "probably", "sometimes", "if", "unless",
    "whether", "will", "shall", "planned", "plans", "proposed", "intends", "used", "formerly",
    "previously", "originally", "longer", "until",
}  # fmt: skip
EXACT = {"title", "key", "short_id"}


@dataclass(frozen=True)
class Span:
    start: int
    end: int


def _words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def _locate(span: str, text: str, avoid: Span | None = None) -> Span | None:
    """Where ``text`` stands in ``span`` (whole words, any case), not overlapping ``avoid``."""
    text = (text or "").strip()
    if not text:
        return None
    for m in re.finditer(rf"(?<!\w){re.escape(text)}(?!\w)", span, re.I):
        if avoid is None or m.end() <= avoid.start or m.start() >= avoid.end:
            return Span(m.start(), m.end())
    return None


def _cue(span: str, relation: Relation | None, basis: str, lo: int, hi: int):
    """The phrase of the relation standing between offsets ``lo`` and ``hi`` (the local
    extractor names the one it read in ``basis``): (Span, inverse) or None."""
    if relation is None:
        return None
    head = basis.split(";", 1)[0]  # "phrase:owns;clause:relative": the phrase read
    read = head.split(":", 1)[1] if head.startswith("phrase:") else None
    phrases = [(p, False) for p in relation.phrases] + [(p, True) for p in relation.inverse_phrases]
    if read is not None:
        phrases = [pi for pi in phrases if pi[0] == read] or phrases
    for phrase, inverse in sorted(phrases, key=lambda pi: -len(pi[0])):
        pattern = r"\s+".join(re.escape(w) for w in phrase.split())
        for m in re.finditer(rf"(?<![\w-]){pattern}(?![\w-])", span, re.I):
            if m.start() >= lo and m.end() <= hi:
                return Span(m.start(), m.end()), inverse
    return None


def _end_features(hows: tuple[str, str]) -> dict[str, float]:
    return {
        "fuzzy_end": float(sum(h == "fuzzy" for h in hows)),
        "pronoun_end": float(sum(h == "self" for h in hows)),
        "unresolved_end": float(sum(h == "unresolved" for h in hows)),
    }


def features(
    st: Statement,
    relation: Relation | None,
    hows: tuple[str, str],
    names: list[tuple[int, int]],
) -> dict[str, float]:
    """The features of one statement: ``hows`` is how each end was named (``validate``),
    ``names`` the offsets of the bank's names found in the span."""
    span = st.span
    first = _locate(span, st.from_text)
    second = _locate(span, st.to_text, first)
    located = [s for s in (first, second) if s is not None]
    if len(located) == 2:
        a, b = sorted(located, key=lambda s: s.start)
    elif located:  # one end names the entry itself without standing in the span
        a = b = located[0]
    else:
        a = b = Span(0, 0)
    lo, hi = (a.end, b.start) if b.start >= a.end else (0, len(span))
    cue = _cue(span, relation, st.basis, lo, hi) if len(located) == 2 else None
    if cue is None and len(located) < 2:  # "It" missing: the cue on the named end's side
        cue = _cue(span, relation, st.basis, 0, len(span))
    gap = span[lo:hi] if len(located) == 2 else ""
    if cue is not None and gap:
        (c, _inverse) = cue
        gap = span[lo : c.start] + " " + span[c.end : hi]
    before = _words(span[: a.start])
    outside = span[: a.start] + " " + span[a.end : b.start] + " " + span[b.end :]
    between = sum(
        1
        for s, e in names
        if s >= lo and e <= hi and (cue is None or e <= cue[0].start or s >= cue[0].end)
    )
    out = _end_features(hows)
    out.update(
        {
            "no_cue": float(cue is None),
            "passive": float(bool(cue and cue[1])),
            "gap": math.log1p(len(_words(gap))),
            "names_between": float(min(between, 3)),
            "relative": float(bool(set(_words(gap)) & RELATIVE or set(before[-2:]) & RELATIVE)),
            "lead": math.log1p(len(before)),
            "length": math.log1p(len(_words(span))),
            "hedge": float(bool(set(_words(outside)) & DOUBT)),
            "extractor_doubt": round(max(0.0, 0.9 - float(st.prior)) * 10, 3),
        }
    )
    return out


def score(feats: dict[str, float]) -> tuple[float, list[list]]:
    """The confidence (0..1, three decimals) and each feature's contribution to the logit,
    largest first (only features that moved it)."""
    weights = {**WEIGHTS, **HAND_SET}
    terms = [[name, round(weights[name] * x, 3)] for name, x in feats.items() if name in weights]
    terms = [t for t in terms if t[1] != 0]
    logit = INTERCEPT + sum(t[1] for t in terms)
    confidence = round(1.0 / (1.0 + math.exp(-logit)), 3)
    return confidence, sorted(terms, key=lambda t: -abs(t[1]))


def explain(basis: dict | None, limit: int = 3) -> str:
    """The largest contributions of a stored basis in words: "an end matched fuzzily −1.0"."""
    terms = (basis or {}).get("terms") or []
    parts = []
    for name, value in terms[:limit]:
        sign = "+" if value > 0 else "−"
        parts.append(f"{WORDS.get(name, name)} {sign}{abs(value):.1f}")
    return "; ".join(parts)


def band_of(confidence: float) -> str:
    for name, lo, _hi in BANDS:
        if confidence >= lo:
            return name
    return BANDS[-1][0]
