"""A generated clustered bank for the large-bank explorer tests, written set-wise (two
``bulk_create`` calls, no history: a picture test needs none), with its Louvain communities
built by the real service.

Clusters of 20–120 entries on topic words, ~3 edges per entry inside a cluster, a few across,
and 5% lone entries. One entry per cluster carries a rare marker word in its title, so a
lexical query finds a known handful of entries in different clusters.
"""

from __future__ import annotations

import random

TOPICS = (
    "billing routing freight customs ledger invoices pallets drivers warehouse tariffs dispatch "
    "manifests payroll tracking returns fleet"
).split()
MARKER = "quokka"


def build_large_bank(slug: str, n: int, embedder):
    from django.db import transaction

    from graph.analytics.communities import build_communities
    from graph.edges.vocab import edge_types_for_bank
    from graph.models import Edge
    from kb.models import Entry, EntryKind
    from kb.services.banks import ensure_bank

    bank, _ = ensure_bank(slug)
    rng = random.Random(11)
    lone = n // 20
    sizes: list[int] = []
    while sum(sizes) < n - lone:
        sizes.append(min(n - lone - sum(sizes), rng.randint(20, 120)))
    kinds = list(EntryKind.objects.filter(bank=None, name__in=["fact", "gotcha", "recipe"]))
    types = edge_types_for_bank(bank)
    relations = [types[r] for r in ("see_also", "cites", "part_of", "clarifies")]
    titles, members, start = [], [], 0
    for c, size in enumerate(sizes):
        topic = TOPICS[c % len(TOPICS)]
        block = list(range(start, start + size))
        members.append(block)
        for j, _ in enumerate(block):
            marker = f" {MARKER} marker" if j == 0 and c % 3 == 0 else ""
            titles.append(f"{topic.title()} cluster {c} note {j}{marker}")
        start += size
    titles += [f"Loose remark {i}" for i in range(n - len(titles))]
    pairs = set()
    for block in members:
        for a in block:
            for b in rng.sample(block, min(3, len(block))):
                if a != b:
                    pairs.add((min(a, b), max(a, b)))
    for _ in range(len(members) * 2):
        a, b = rng.sample(members, 2)
        pairs.add((rng.choice(a), rng.choice(b)))
    with transaction.atomic():
        entries = Entry.objects.bulk_create(
            [
                Entry(bank=bank, kind=rng.choice(kinds), short_id=f"{i:08x}", title=title)
                for i, title in enumerate(titles)
            ],
            batch_size=5000,
        )
        Edge.objects.bulk_create(
            [
                Edge(
                    bank=bank,
                    from_entry=entries[a],
                    to_entry=entries[b],
                    type=rng.choice(relations),
                    note="" if rng.random() < 0.5 else "How the other entry pertains.",
                    source="author",
                )
                for a, b in sorted(pairs)
            ],
            batch_size=5000,
        )
    build_communities(bank, embedder=embedder)
    return bank
