"""One hop of a walk (``EdgeReads.hop``) on its own: which rows it may return, and what it
costs on a hub whose edges the bank's other edges crowd.

The walk's property test (test_traverse_equivalence) takes a hop's rows as given — which of
a cut hop's edges come back is PostgreSQL's to choose. Here the rows themselves are held to
the rule: every one an allowed edge touching the level in the hop's direction, its far end of
an allowed kind, none twice, and exactly ``limit`` of them when more exist (the walk reads
``budget + 1`` rows and takes the extra one as proof of a cut).
"""

from __future__ import annotations

import itertools
from unittest import mock

import pytest
from django.db import connection, transaction
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from graph.models import Edge, EdgeType
from graph.traversal import reads as reads_module
from graph.traversal.reads import EdgeReads
from kb.models import Bank, Entry, EntryKind
from tests.plans import analyzed_plan, plan_nodes
from tests.property_settings import property_settings

pytestmark = pytest.mark.django_db

PROPERTY = property_settings(40)
RELATIONS = ["cites", "see_also"]
KINDS = ["fact", "service"]
_banks = itertools.count(1)


@st.composite
def hops(draw) -> dict:
    n = draw(st.integers(2, 12))
    index = st.integers(0, n - 1)
    edge = st.tuples(index, index, st.sampled_from(RELATIONS), st.booleans()).filter(
        lambda e: e[0] != e[1]  # a bank has no self-loops (edge_no_self_loop)
    )
    return {
        "kinds": draw(st.lists(st.sampled_from(KINDS), min_size=n, max_size=n)),
        # edges between two nodes of the level included
        "edges": draw(st.lists(edge, max_size=40, unique_by=lambda e: e[:3])),
        "level": draw(st.lists(index, min_size=1, max_size=n, unique=True)),
        "direction": draw(st.sampled_from(["out", "in", "both"])),
        "relations": draw(st.lists(st.sampled_from(RELATIONS), min_size=1, unique=True)),
        "allowed": draw(st.one_of(st.none(), st.lists(st.sampled_from(KINDS), min_size=1))),
        "limit": draw(st.integers(1, 45)),
    }


def expected_edges(spec: dict, entries, edges) -> set[int]:
    """The ids of the allowed edges the hop may return, by the rule."""
    level = {entries[i].pk for i in spec["level"]}
    kind_of = {e.pk: e.kind.name for e in entries}
    allowed = set(spec["allowed"] or KINDS)
    found = set()
    for edge in edges:
        if edge.type.name not in spec["relations"] or edge.invalidated_at is not None:
            continue
        a, b = edge.from_entry_id, edge.to_entry_id
        if spec["direction"] in ("out", "both") and a in level and kind_of[b] in allowed:
            found.add(edge.pk)
        if spec["direction"] in ("in", "both") and b in level and kind_of[a] in allowed:
            found.add(edge.pk)
    return found


@PROPERTY
@given(spec=hops())
def test_a_hop_returns_each_allowed_edge_once_up_to_its_limit(spec):
    """Read node by node or in one scan (a wide level under a large limit), the same rule."""
    with transaction.atomic():
        bank = Bank.objects.create(slug=f"hop-{next(_banks)}", name="Hop")
        kinds = {k.name: k for k in EntryKind.objects.filter(bank=None, name__in=KINDS)}
        entries = Entry.objects.bulk_create(
            Entry(bank=bank, kind=kinds[k], short_id=f"{i:08x}", title=f"N{i}")
            for i, k in enumerate(spec["kinds"])
        )
        types = {t.name: t for t in EdgeType.objects.filter(bank=None, name__in=RELATIONS)}
        now = timezone.now()
        edges = Edge.objects.bulk_create(
            Edge(
                bank=bank,
                from_entry=entries[a],
                to_entry=entries[b],
                type=types[relation],
                invalidated_at=now if retired else None,
            )
            for a, b, relation, retired in spec["edges"]
        )
        later = timezone.now()
        kind_ids = None if spec["allowed"] is None else [kinds[k].pk for k in spec["allowed"]]
        reads = EdgeReads(bank.pk, later, later, kind_ids)
        read = {}
        for form, at_most in (("per node", 10**9), ("one scan", -1)):
            with (
                mock.patch.object(reads_module, "PER_NODE_LEVEL", at_most),
                mock.patch.object(reads_module, "PER_NODE_LIMIT", at_most),
            ):
                read[form] = reads.hop(
                    [entries[i].pk for i in spec["level"]],
                    sorted(types[r].pk for r in spec["relations"]),
                    spec["direction"],
                    spec["limit"],
                )
        transaction.set_rollback(True)
    expected = expected_edges(spec, entries, edges)
    for form, rows in read.items():
        ids = [row[0] for row in rows]
        assert len(ids) == len(set(ids)), f"an edge came twice ({form})"
        assert set(ids) <= expected, form
        assert len(ids) == min(spec["limit"], len(expected)), form


def _crowded_hub(bank: Bank, others: int, spokes: int) -> Entry:
    """``others`` edges among other entries, then a hub cited by ``spokes`` entries: the
    hub's edges come last in the table, as edges added to a grown bank do."""
    kind = EntryKind.objects.get(bank=None, name="fact")
    Entry.objects.bulk_create(
        Entry(bank=bank, kind=kind, short_id=f"{i:08x}", title=f"N{i}") for i in range(others + 1)
    )
    pks = list(Entry.objects.filter(bank=bank).order_by("pk").values_list("pk", flat=True))
    hub, rest = pks[0], pks[1:]
    cites = EdgeType.objects.get(bank=None, name="cites")
    Edge.objects.bulk_create(
        Edge(bank=bank, from_entry_id=a, to_entry_id=b, type=cites)
        for a, b in zip(rest, rest[1:] + rest[:1], strict=True)
    )
    Edge.objects.bulk_create(
        Edge(bank=bank, from_entry_id=a, to_entry_id=hub, type=cites) for a in rest[:spokes]
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE graph_edge")
    return Entry.objects.get(pk=hub)


def _rows_examined(plan: dict) -> int:
    """Rows the plan's scans of graph_edge produced or threw away, over all their loops."""
    return sum(
        (n.get("Actual Rows", 0) + n.get("Rows Removed by Filter", 0)) * n.get("Actual Loops", 1)
        for n in plan_nodes(plan)
        if n.get("Relation Name") == "graph_edge"
    )


@pytest.mark.parametrize("direction", ["in", "both"])
def test_a_crowded_hub_is_read_through_its_own_index(bank, direction):
    """A hub's edges added after 6,000 others: the hop reads about its ``limit`` rows, not
    the bank's edges until enough of the hub's turn up (the plan a single ``= ANY`` of the
    level can get: the planner expects the hub's rows spread through the bank's index)."""
    hub = _crowded_hub(bank, others=6000, spokes=800)
    cites = EdgeType.objects.get(bank=None, name="cites")
    now = timezone.now()
    reads = EdgeReads(bank.pk, now, now, None)
    sent = []

    def keep(execute, sql, params, many, context):
        sent.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(keep):
        rows = reads.hop([hub.pk], [cites.pk], direction, 51)
    assert len(rows) == 51
    sql, params = sent[-1]
    assert _rows_examined(analyzed_plan(sql, params)) <= 2 * 51


@pytest.mark.parametrize("allowed", ["fact", "service", None])
def test_an_edge_inside_the_level_comes_once_whichever_end_is_allowed(bank, allowed):
    """Both directions, an edge from a service to a fact, both in the level: it is read
    as the fact's incoming edge or the service's outgoing one, by which end's kind the hop
    allows (the far end's), and never as both."""
    kinds = {k.name: k for k in EntryKind.objects.filter(bank=None, name__in=KINDS)}
    service, fact = Entry.objects.bulk_create(
        Entry(bank=bank, kind=kinds[name], short_id=f"{i:08x}", title=name)
        for i, name in enumerate(["service", "fact"])
    )
    cites = EdgeType.objects.get(bank=None, name="cites")
    edge = Edge.objects.create(bank=bank, from_entry=service, to_entry=fact, type=cites)
    now = timezone.now()
    kind_ids = None if allowed is None else [kinds[allowed].pk]
    rows = EdgeReads(bank.pk, now, now, kind_ids).hop([service.pk, fact.pk], [cites.pk], "both", 10)
    assert [row[0] for row in rows] == [edge.pk]
