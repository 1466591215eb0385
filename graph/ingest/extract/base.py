"""The extractor interface: read one entry's text, state the relations it quotes.

An extractor only *reads*: it returns :class:`Statement` rows (a verbatim span, a relation of
the bank's vocabulary, two surface forms exactly as written). Resolution of the surface forms
and every check happen afterwards in ``validate``, so they are the same whatever extractor
ran, and nothing an extractor says reaches the queue unchecked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from graph.models import EdgeType
from kb.errors import KbError
from kb.models import Bank, Entry

# Relations an extractor may not propose: ``other`` needs a curator's label, and citations
# have their own backfill from ids in prose.
NOT_EXTRACTED = {"other"}


@dataclass(frozen=True)
class Statement:
    """One relation an extractor read in an entry, before validation."""

    span: str  # verbatim text of the entry's title or content
    relation: str  # a relation name of the bank's vocabulary (checked later)
    from_text: str  # surface forms exactly as written (not normalised)
    to_text: str
    prior: float = 0.8  # how much the extractor trusts the reading itself (0..1)
    from_self: bool = False  # the subject is the source entry ("It requires …")
    to_self: bool = False  # the object is the source entry ("It is owned by …", inverse)
    basis: str = ""  # e.g. "phrase:requires", "llm:first", "llm:glean"


@dataclass(frozen=True)
class Relation:
    name: str
    description: str
    phrases: tuple[str, ...]
    inverse_phrases: tuple[str, ...]
    bank_defined: bool


@dataclass
class Vocabulary:
    """The relations a bank's extraction may propose, with their phrases."""

    relations: dict[str, Relation] = field(default_factory=dict)
    types: dict[str, EdgeType] = field(default_factory=dict)

    @classmethod
    def for_bank(cls, bank: Bank) -> Vocabulary:
        from graph.edges.vocab import edge_types_for_bank

        types = {n: t for n, t in edge_types_for_bank(bank).items() if n not in NOT_EXTRACTED}
        relations = {}
        for name, etype in types.items():
            phrases = tuple(p.strip() for p in etype.phrases if p.strip())
            if not phrases and etype.bank_id is not None:
                # A bank's own type without phrases still reads as its name: depends_on.
                phrases = (name.replace("_", " "),)
            relations[name] = Relation(
                name,
                etype.description,
                phrases,
                tuple(p.strip() for p in etype.inverse_phrases if p.strip()),
                etype.bank_id is not None,
            )
        return cls(relations, types)


class ExtractorError(KbError):
    """An extractor could not read an entry (after its retries); nothing of it is queued."""

    status = 502
    code = "extractor_failed"


class RateLimited(ExtractorError):
    """The endpoint keeps answering 429: stop the run, leave the rest for the next one."""

    code = "extractor_rate_limited"


class Extractor(Protocol):
    name: str

    def extract(self, entry: Entry, vocabulary: Vocabulary) -> list[Statement]: ...
