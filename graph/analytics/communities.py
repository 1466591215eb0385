"""Louvain communities over a bank's current edges, with extractive summaries (``003_*``).

``build_communities`` replaces a bank's communities atomically: readers see the old set or
the new one, never a mix. Summaries are extractive (no language model): the titles of the
most central members and the terms that are frequent in the community but rare in the bank.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from dataclasses import dataclass

import networkx as nx
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from pgvector.django import CosineDistance

from graph.edges.links import current_q
from graph.models import Community, CommunityMembership, Edge
from kb.errors import InvalidInput, NotFound
from kb.models import Bank, Entry, EntryStatus
from kb.services.embedding import Embedder, embed_query, get_embedder
from kb.services.entries import find_entry

LOUVAIN_SEED = 20260101  # fixed: the same graph always yields the same communities
MIN_SIZE = 2
CENTRAL_SHOWN = 5
TERMS_SHOWN = 6
LEXICAL_WEIGHT = 0.5

_TOKEN = re.compile(r"[a-z][a-z0-9+_-]{2,}")
STOPWORDS = frozenset(
    """
    the and for with from that this are was were will would can could should have has had not
    but all any its into onto over under out off our your their his her them they you who what
    when where which why how use used uses using via per each than then there these those also
    about after before more most much many such only other some same very just like may might
    must shall does did done been being between both either neither while within without
    """.split()
)


def tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall((text or "").lower()) if t not in STOPWORDS]


@dataclass
class CommunityBuild:
    """What a rebuild produced."""

    bank: Bank
    communities: int
    members: int
    nodes: int
    edges: int
    took_ms: float


def _graph(bank: Bank) -> nx.Graph:
    """The bank's current edges as an undirected graph; parallel edges add their weights."""
    graph = nx.Graph()
    rows = (
        Edge.objects.filter(bank=bank)
        .filter(current_q())
        .exclude(from_entry__status__in=[EntryStatus.MERGED, EntryStatus.DELETED])
        .exclude(to_entry__status__in=[EntryStatus.MERGED, EntryStatus.DELETED])
        .values_list("from_entry_id", "to_entry_id", "type__score_weight")
    )
    for a, b, weight in rows.iterator(chunk_size=10000):
        weight = float(weight or 1.0)
        if graph.has_edge(a, b):
            graph[a][b]["weight"] += weight
        else:
            graph.add_edge(a, b, weight=weight)
    return graph


def _distinctive_terms(
    member_docs: list[list[str]], bank_df: Counter, bank_size: int, count: int
) -> list[str]:
    """Terms frequent among the members and rare in the bank (document-frequency TF-IDF)."""
    df = Counter()
    for doc in member_docs:
        df.update(set(doc))
    scored = []
    for term, n in df.items():
        if n < 2 and len(member_docs) > 2:
            continue  # one member's word says nothing about the group
        idf = math.log((1 + bank_size) / (1 + bank_df.get(term, 0))) + 1.0
        scored.append((n / len(member_docs) * idf, term))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [term for _, term in scored[:count]]


def build_communities(
    bank: Bank,
    *,
    resolution: float = 1.0,
    min_size: int = MIN_SIZE,
    embedder: Embedder | None = None,
) -> CommunityBuild:
    """Detect Louvain communities (fixed seed) over the bank's current edges, summarise and
    embed each, and replace the bank's communities in one transaction."""
    started = time.perf_counter()
    graph = _graph(bank)
    groups = (
        nx.community.louvain_communities(
            graph, weight="weight", resolution=resolution, seed=LOUVAIN_SEED
        )
        if graph.number_of_nodes()
        else []
    )
    groups = [g for g in groups if len(g) >= min_size]
    texts = {
        pk: (title, summary)
        for pk, title, summary in Entry.objects.filter(bank=bank)
        .exclude(status__in=[EntryStatus.MERGED, EntryStatus.DELETED])
        .values_list("pk", "title", "summary")
        .iterator(chunk_size=10000)
    }
    docs = {pk: tokens(f"{title} {summary}") for pk, (title, summary) in texts.items()}
    bank_df = Counter()
    for doc in docs.values():
        bank_df.update(set(doc))
    planned = [_plan_community(graph, group, texts, docs, bank_df) for group in groups]
    embedder = embedder or get_embedder()
    vectors = embedder.embed([p.summary for p in planned]) if planned else []
    rows, members = _replace_communities(bank, planned, vectors, embedder.name, texts)
    return CommunityBuild(
        bank,
        len(rows),
        members,
        graph.number_of_nodes(),
        graph.number_of_edges(),
        (time.perf_counter() - started) * 1000,
    )


@dataclass
class _Planned:
    group: set
    centrality: dict
    central: list
    terms: list
    label: str
    summary: str


def _plan_community(
    graph: nx.Graph, group: set, texts: dict, docs: dict, bank_df: Counter
) -> _Planned:
    """A community's members ranked by centrality, its distinctive terms, label and summary."""
    sub = graph.subgraph(group)
    strength = dict(sub.degree(weight="weight"))
    top = max(strength.values()) or 1.0
    centrality = {pk: strength[pk] / top for pk in group}
    overall = graph.degree(group, weight="weight")
    ranked = sorted(
        group,
        key=lambda pk: (-centrality[pk], -overall[pk], texts.get(pk, ("",))[0], pk),
    )
    central = [pk for pk in ranked if pk in texts][:CENTRAL_SHOWN]
    terms = _distinctive_terms([docs.get(pk, []) for pk in group], bank_df, len(texts), TERMS_SHOWN)
    titles = [texts[pk][0] for pk in central]
    label = titles[0] if titles else f"Community of {len(group)}"
    if terms:
        label = f"{label} — {', '.join(terms[:3])}"
    summary = f"{len(group)} entries centred on " + "; ".join(titles) + "."
    if terms:
        summary += " Distinctive terms: " + ", ".join(terms) + "."
    return _Planned(group, centrality, central, terms, label[:300], summary)


def _replace_communities(
    bank: Bank, planned: list[_Planned], vectors: list, model: str, texts: dict
) -> tuple[list[Community], int]:
    """Replace the bank's communities and memberships in one transaction."""
    now = timezone.now()
    with transaction.atomic():
        Community.objects.filter(bank=bank).delete()  # memberships cascade
        rows = [
            Community(
                bank=bank,
                label=p.label,
                size=len(p.group),
                summary=p.summary,
                terms=p.terms,
                central_entry_ids=p.central,
                embedding=vector,
                embedding_model=model,
                computed_at=now,
            )
            for p, vector in zip(planned, vectors, strict=True)
        ]
        Community.objects.bulk_create(rows, batch_size=500)
        members = [
            CommunityMembership(
                community=community, bank=bank, entry_id=pk, centrality=p.centrality[pk]
            )
            for community, p in zip(rows, planned, strict=True)
            for pk in p.group
            if pk in texts
        ]
        CommunityMembership.objects.bulk_create(members, batch_size=5000)
    return rows, len(members)


# --- reading ----------------------------------------------------------------------------------


def community_json(community: Community, central: dict[int, Entry], score: float | None = None):
    data = {
        "id": community.pk,
        "label": community.label,
        "size": community.size,
        "summary": community.summary,
        "terms": list(community.terms),
        "central": central_refs(community, central),
        "computed_at": community.computed_at.isoformat(),
    }
    if score is not None:
        data["score"] = round(score, 6)
    return data


def central_refs(community: Community, central: dict[int, Entry]) -> list[dict]:
    """A community's most central entries as ``{"id", "title"}``, in centrality order
    (``central`` from :func:`central_entries`)."""
    return [
        {"id": central[pk].short_id, "title": central[pk].title}
        for pk in community.central_entry_ids
        if pk in central
    ]


def central_entries(communities: list[Community]) -> dict[int, Entry]:
    """The central entries of ``communities`` (one bank), by pk, in one statement."""
    ids = {pk for c in communities for pk in c.central_entry_ids}
    if not ids:
        return {}
    bank_id = communities[0].bank_id
    return (
        Entry.objects.filter(bank_id=bank_id, pk__in=ids).only("pk", "short_id", "title").in_bulk()
    )


def list_communities(bank: Bank, *, limit: int = 20, offset: int = 0) -> list[dict]:
    """The bank's communities, largest first."""
    rows = list(
        Community.objects.filter(bank=bank).order_by("-size", "id")[offset : offset + limit]
    )
    central = central_entries(rows)
    return [community_json(c, central) for c in rows]


def search_communities(
    bank: Bank, q: str, *, limit: int = 10, embedder: Embedder | None = None
) -> list[dict]:
    """Communities whose summary is close to ``q``: cosine of the summary vectors, plus the
    share of the query's terms found in the label and summary (weighted 0.5)."""
    words = set(tokens(q))
    vector = embed_query(q, embedder)
    pool = max(limit * 4, 40)
    by_vector = list(
        Community.objects.filter(bank=bank, embedding__isnull=False)
        .annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance")[:pool]
    )
    lexical_q = Q()
    for word in words:
        lexical_q |= Q(summary__icontains=word) | Q(label__icontains=word)
    by_text = (
        list(
            Community.objects.filter(bank=bank)
            .filter(lexical_q)
            .annotate(distance=CosineDistance("embedding", vector))
            .order_by("-size")[:pool]
        )
        if words
        else []
    )
    candidates = {c.pk: c for c in by_vector + by_text}
    scored = []
    for c in candidates.values():
        cosine = 1.0 - c.distance if c.distance is not None else 0.0
        text_words = set(tokens(f"{c.label} {c.summary}"))
        lexical = len(words & text_words) / len(words) if words else 0.0
        scored.append((cosine + LEXICAL_WEIGHT * lexical, c))
    scored.sort(key=lambda item: (-item[0], -item[1].size, item[1].pk))
    top = scored[:limit]
    central = central_entries([c for _, c in top])
    return [community_json(c, central, score) for score, c in top]


def community_of(bank: Bank, entry_ref: str) -> dict:
    """The community of an entry with its centrality; 404 ``no_community`` when it has none."""
    if not isinstance(entry_ref, str) or not entry_ref.strip():
        raise InvalidInput("Give an entry id.", code="invalid_input")
    entry = find_entry(bank, entry_ref)
    membership = (
        CommunityMembership.objects.filter(bank=bank, entry=entry)
        .select_related("community")
        .first()
    )
    if membership is None:
        raise NotFound(
            f"Entry {entry.short_id} belongs to no community (it has no current edges, its "
            "group is too small, or communities were not built since it was linked).",
            code="no_community",
        )
    community = membership.community
    return {
        "entry": {"id": entry.short_id, "title": entry.title},
        "centrality": round(membership.centrality, 6),
        "community": community_json(community, central_entries([community])),
    }
