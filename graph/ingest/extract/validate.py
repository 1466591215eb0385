"""Validation of every statement before it is queued as an edge proposal.

A statement reaches the queue only when:

- its relation is in the bank's vocabulary (core types plus the bank's own, less ``other``);
- its span occurs verbatim in the source entry's title or content, and both surface forms
  occur in the span (an extractor may not normalise names) — except a form naming the source
  entry itself, which the span may call "It" or "This step";
- each end resolves to exactly one entry of the bank, or is kept *unresolved* with its
  surface form and candidates (ambiguous or unknown names are never guessed);
- it is not a self-loop and the triple is not already a current edge;
- it puts no agent (an entry of kind role, team or person) into a sequence: ``precedes``
  orders happenings, so "X is followed closely by the GM" or "the riggers follow the Running
  Order" is attending or obeying, never a step after a step;
- the same statement was never proposed before, whatever its decision (a rejected proposal
  is not raised again), and the same resolved triple was not rejected for this source.

Everything else is dropped and counted by reason.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass

from graph.edges.links import current_q
from graph.ingest.extract import confidence as scoring
from graph.ingest.extract.base import Statement, Vocabulary
from graph.ingest.extract.mentions import MentionIndex, Resolved
from graph.models import Edge, EdgeProposal, EdgeProposalStatus, EdgeType
from graph.resolution.aliases import normalize
from kb.models import Bank, Entry

MAX_SPAN = 2000
SEQUENCE = "precedes"  # the core relation that orders happenings (``workflow_role``)
AGENT_KINDS = {"role", "team", "person"}


def agent_kind(kind: str | None) -> bool:
    """An entry kind that names who acts (a role, team or person), not what happens."""
    return bool(kind) and (kind in AGENT_KINDS or kind.endswith(("_role", "_team")))


def agent_in_sequence(etype: EdgeType, kinds: list[str | None]) -> bool:
    """A sequence relation with an agent at an end: "follow" in another sense."""
    sequence = etype.name == SEQUENCE or etype.workflow_role == SEQUENCE
    return sequence and any(agent_kind(k) for k in kinds)


MAX_SURFACE = 300


@dataclass
class Checked:
    """A statement that passed validation: what the queue stores."""

    statement: Statement
    type: EdgeType
    from_pk: int | None
    to_pk: int | None
    candidates: dict
    confidence: float
    fingerprint: str
    basis: dict  # the confidence's features and their contributions (``confidence``)


def fingerprint(entry_pk: int, relation: str, from_form: str, to_form: str) -> str:
    raw = f"{entry_pk}|{relation}|{from_form}|{to_form}"
    return hashlib.sha256(raw.encode()).hexdigest()


class Validator:
    """Checks statements of one bank; counts what it drops in ``dropped``."""

    def __init__(self, bank: Bank, vocabulary: Vocabulary, index: MentionIndex):
        self.bank, self.vocabulary, self.index = bank, vocabulary, index
        self.dropped: Counter[str] = Counter()
        self._entry_pk: int | None = None
        self._seen: set[str] = set()
        self._rejected: set[tuple] = set()
        self._triples: set[tuple] = set()
        self._names: dict[str, list[tuple[int, int]]] = {}

    def begin(self, entry: Entry) -> None:
        """Load what was already proposed from ``entry`` (two statements per entry)."""
        self._entry_pk = entry.pk
        rows = EdgeProposal.objects.filter(bank=self.bank, source_entry=entry)
        self._seen = set(rows.values_list("fingerprint", flat=True))
        self._rejected = set(
            rows.filter(status=EdgeProposalStatus.REJECTED).values_list(
                "from_entry_id", "to_entry_id", "type_id"
            )
        )
        self._triples = set()
        self._names = {}

    def _drop(self, reason: str) -> None:
        self.dropped[reason] += 1

    def _end(self, entry: Entry, text: str, is_self: bool) -> tuple[int | None, str, list]:
        if is_self:
            return entry.pk, "self", []
        found: Resolved = self.index.resolve(text)
        if found.status == "resolved":
            return found.entry_pk, found.matched or "title", []
        return None, "unresolved", found.candidates

    def check(self, entry: Entry, st: Statement) -> Checked | None:
        if self._entry_pk != entry.pk:
            self.begin(entry)
        etype = self.vocabulary.types.get(st.relation) if isinstance(st.relation, str) else None
        if etype is None:
            return self._drop("relation_not_in_vocabulary")
        span = st.span if isinstance(st.span, str) else ""
        if not span.strip() or len(span) > MAX_SPAN:
            return self._drop("span_missing_or_too_long")
        if span not in entry.title and span not in (entry.content or ""):
            return self._drop("span_not_verbatim")
        ends = []
        for text, is_self in ((st.from_text, st.from_self), (st.to_text, st.to_self)):
            if not isinstance(text, str) or not text.strip() or len(text) > MAX_SURFACE:
                return self._drop("end_missing")
            text = text.strip()
            pk, how, cands = self._end(entry, text, is_self)
            if text.lower() not in span.lower():
                # Only the source entry itself may be named by a form the span lacks: the
                # span says "It", the extractor names the entry the text is about.
                if pk != entry.pk:
                    return self._drop("end_not_in_span")
                how, is_self = "self", True
            ends.append((text, pk, how, cands, is_self))
        (from_text, from_pk, from_how, from_cands, from_self) = ends[0]
        (to_text, to_pk, to_how, to_cands, to_self) = ends[1]
        if from_pk is not None and from_pk == to_pk:
            return self._drop("self_loop")
        kinds = [self.index.info[pk][2] for pk in (from_pk, to_pk) if pk in self.index.info]
        if agent_in_sequence(etype, kinds):
            return self._drop("agent_in_sequence")
        key = fingerprint(
            entry.pk,
            etype.name,
            "@self" if from_self else normalize(from_text),
            "@self" if to_self else normalize(to_text),
        )
        if key in self._seen:
            return self._drop("already_proposed")
        if from_pk is not None and to_pk is not None:
            triple = (from_pk, to_pk, etype.pk)
            if triple in self._rejected:
                return self._drop("rejected_before")
            if triple in self._triples:
                return self._drop("already_proposed")
            if (
                Edge.objects.filter(from_entry_id=from_pk, to_entry_id=to_pk, type=etype)
                .filter(current_q())
                .exists()
            ):
                return self._drop("current_edge")
            self._triples.add(triple)
        self._seen.add(key)
        confidence, basis = self._score(st, span, (from_how, to_how))
        candidates = {k: v for k, v in (("from", from_cands), ("to", to_cands)) if v}
        return Checked(st, etype, from_pk, to_pk, candidates, confidence, key, basis)

    def _score(self, st: Statement, span: str, hows: tuple[str, str]) -> tuple[float, dict]:
        if span not in self._names:
            self._names[span] = [(m.start, m.end) for m in self.index.find(span)]
        prior = min(max(float(st.prior), 0.0), 1.0)
        reading = Statement(span, st.relation, st.from_text, st.to_text, prior, basis=st.basis)
        relation = self.vocabulary.relations.get(st.relation)
        feats = scoring.features(reading, relation, hows, self._names[span])
        confidence, terms = scoring.score(feats)
        used = {k: round(v, 3) for k, v in feats.items() if v}
        return confidence, {"features": used, "terms": terms}
