"""What the query action returns (typed data; :mod:`graph.retrieval.presenter` renders it as
API.md's JSON). Ids here are public ``short_id``s except ``AnswerResult.entry_id``."""

from __future__ import annotations

from dataclasses import dataclass, field

from kb.models import Entry


@dataclass
class Pointer:
    """A folded member (``kind="folded"``) or a one-hop neighbour (``kind="neighbor"``)."""

    id: str
    relation: str
    direction: str  # seen from the result
    kind: str
    note: str
    summary: str
    title: str
    status: str
    steps: list | None = None
    via: dict | None = None  # folded items only (rendered for them, null or the hop)
    replacement: bool = False  # a pinned neighbour that supersedes its result
    content: str | None = None  # only for ids the request asked to expand


@dataclass
class Link:
    """A current edge between two returned results, seen from the holder; also a hop line."""

    id: str
    relation: str
    direction: str
    note: str


@dataclass
class AnswerResult:
    entry: Entry
    score: float
    rank: int
    matched_by: list[str]
    lifecycle: str | None
    relevance: float
    confidence: str
    related: list[Pointer] = field(default_factory=list)
    neighbors: list[Pointer] = field(default_factory=list)
    hops: list[Link] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    corrected_by: str | None = None
    superseded_by: str | None = None

    @property
    def id(self) -> str:
        return self.entry.short_id

    @property
    def entry_id(self) -> int:
        return self.entry.pk


@dataclass
class QueryStats:
    pool: int = 0
    groups: int = 0
    folded: int = 0
    refilled: int = 0
    neighbor_cap_reached: int = 0
    refills_below_floor: int = 0
    ranked_after_corrector: int = 0
    hops_cut: int = 0


@dataclass
class QueryAnswer:
    """A query's answer before rendering: results in answer order and the fold's figures."""

    bank: str
    query: str
    fold: bool
    no_good_match: bool
    results: list[AnswerResult]
    stats: QueryStats
    budget_tokens: int
    compact: bool = False
    started: float = 0.0  # perf_counter() when the action began (took_ms counts rendering too)
