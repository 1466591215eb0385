"""The walk against a plain reference of its rules, on random graphs (hypothesis), and its
statement count under a budget cut.

The reference is written for clarity, not speed: every allowed edge of the bank read through
the ORM, sets and loops. It takes from the walk only what the rules leave to PostgreSQL —
which rows a hop's ``LIMIT`` returns (the hop has no ``ORDER BY``, so a hub stops at the
budget) — and derives the rest on its own: the expansion in id order, the parents, the
frontier of a cut walk (an allowed edge left unexpanded to an entry not reached), the
``max_depth`` cut, the evidence budget and the answer's edges as ``edge_json`` renders them.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
from collections.abc import Iterator

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from graph.edges.links import believed_q, valid_q
from graph.models import Edge, EdgeType
from graph.traversal import reads, walk
from graph.traversal.walk import Limits, Step, approx_tokens, traverse
from kb.models import Bank, Entry, EntryKind
from tests.property_settings import property_settings

pytestmark = pytest.mark.django_db

PROPERTY = property_settings(40)
RELATIONS = ["cites", "see_also", "part_of"]
PAST, FUTURE = dt.datetime(2020, 1, 1, tzinfo=dt.UTC), dt.datetime(2999, 1, 1, tzinfo=dt.UTC)
VALIDITY = [(None, None), (None, None), (None, None), (None, PAST), (FUTURE, None)]
NOTES = ["", "", "", "Breaks without it.", "Uses its ledger ⇄ Feeds the reports"]
EVIDENCE = [{}, {}, {"quote": "the connector posts to the ledger every night"}]
_banks = itertools.count(1)


@st.composite
def graphs(draw) -> dict:
    n = draw(st.integers(3, 14))
    index = st.integers(0, n - 1)
    edge = st.tuples(
        index,
        index,
        st.sampled_from(RELATIONS),
        st.sampled_from(VALIDITY),
        st.sampled_from(NOTES),
        st.sampled_from(EVIDENCE),
    ).filter(lambda e: e[0] != e[1])
    edges = draw(st.lists(edge, max_size=45, unique_by=lambda e: (e[0], e[1], e[2])))
    step = st.builds(
        Step,
        st.lists(st.sampled_from(RELATIONS), min_size=1, max_size=2, unique=True).map(tuple),
        st.sampled_from(["out", "in", "both"]),
    )
    plan = draw(st.one_of(step, st.lists(step, min_size=1, max_size=3)))
    limits = Limits(
        draw(st.one_of(st.none(), st.integers(1, 3))),
        draw(st.integers(1, 25)),
        draw(st.integers(1, 12)),
        draw(st.sampled_from([0, 10, 40, 2000])),
    )
    return {"n": n, "edges": edges, "start": draw(index), "plan": plan, "limits": limits}


@contextlib.contextmanager
def fresh_bank() -> Iterator[Bank]:
    with transaction.atomic():
        number = next(_banks)
        yield Bank.objects.create(slug=f"equivalence-{number}", name=f"Equivalence {number}")
        transaction.set_rollback(True)


def build(bank: Bank, spec: dict) -> list[Entry]:
    kind = EntryKind.objects.get(bank=None, name="fact")
    Entry.objects.bulk_create(
        Entry(bank=bank, kind=kind, short_id=f"{i:08x}", title=f"Node {i}")
        for i in range(spec["n"])
    )
    entries = list(Entry.objects.filter(bank=bank).order_by("pk"))
    types = {t.name: t for t in EdgeType.objects.filter(bank=None, name__in=RELATIONS)}
    Edge.objects.bulk_create(
        Edge(
            bank=bank,
            from_entry=entries[a],
            to_entry=entries[b],
            type=types[relation],
            valid_from=valid[0],
            valid_to=valid[1],
            note=note,
            evidence=evidence,
        )
        for a, b, relation, valid, note, evidence in spec["edges"]
    )
    return entries


class HopLog:
    """The rows each hop statement returned, in the order it returned them."""

    def __init__(self, monkeypatch):
        self.rows: list[list[tuple]] = []
        original = reads.EdgeReads.hop

        def hop(edge_reads, *args, **kwargs):
            rows = original(edge_reads, *args, **kwargs)
            self.rows.append(list(rows))
            return rows

        monkeypatch.setattr(reads.EdgeReads, "hop", hop)


def reference(bank: Bank, start: Entry, spec: dict, hops: list[list[tuple]], now) -> dict:
    """What the rules say the walk finds, given the rows each hop read."""
    plan, limits = spec["plan"], spec["limits"]
    if isinstance(plan, Step):
        cap, planned, steps = limits.max_depth or walk.DEFAULT_DEPTH, None, None
    else:
        planned, steps = len(plan), plan
        cap = min(planned, limits.max_depth or planned)

    def step(d: int) -> Step:
        return plan if steps is None else steps[min(d, len(steps) - 1)]

    allowed = list(
        Edge.objects.filter(bank=bank)
        .filter(believed_q(now) & valid_q(now))
        .values_list("id", "from_entry_id", "to_entry_id", "type__name")
    )

    def crossings(d: int, node: int):
        """(edge id, far end) of the allowed edges of hop ``d`` leaving ``node``."""
        s = step(d)
        for eid, a, b, name in allowed:
            if name in s.relations:
                if s.direction in ("out", "both") and a == node:
                    yield eid, b
                if s.direction in ("in", "both") and b == node:
                    yield eid, a

    depth, parents, edges, frontier, hit = {start.pk: 0}, {}, set(), [], []
    level, budget, read, expanded_total, cut = [start.pk], limits.max_expansions, 0, 0, False
    for d in range(cap):
        if not level:
            break
        rows = sorted(hops.pop(0))  # the expansion order: edge id
        read += len(rows)
        expanded = rows[:budget]
        expanded_total += len(expanded)
        budget -= len(expanded)
        s, in_level, next_level = step(d), set(level), []
        for row in expanded:
            ends = []
            if s.direction in ("out", "both") and row[1] in in_level:
                ends.append((row[1], row[2]))
            if s.direction in ("in", "both") and row[2] in in_level:
                ends.append((row[2], row[1]))
            for src, dst in ends:
                if dst not in depth:
                    depth[dst], parents[dst] = d + 1, []
                    next_level.append(dst)
                if depth[dst] == d + 1:
                    parents[dst].append((src, row[0]))
                    edges.add(row[0])
        if len(rows) > len(expanded):
            cut, hit = True, ["max_expansions"]
            earlier = {pk for pk, at in depth.items() if at <= d}
            taken = {row[0] for row in expanded}
            open_ = {
                n
                for n in level
                if any(e not in taken and far not in earlier for e, far in crossings(d, n))
            }
            if d + 1 < cap:
                open_ |= {
                    n for n in next_level if any(f not in depth for _, f in crossings(d + 1, n))
                }
            frontier = [pk for pk in depth if pk in open_]
            break
        level = next_level
    if not cut and level and (planned is None or cap < planned):
        onward = {n for n in level if any(f not in depth for _, f in crossings(cap, n))}
        if onward:
            hit, frontier = ["max_depth"], [pk for pk in depth if pk in onward]
    return {
        "depth": list(depth.items()),
        "parents": parents,
        "edges": edges,
        "frontier": frontier,
        "limits_hit": hit,
        "expansions": expanded_total,
        "read": read,
    }


def withheld_by_rule(result) -> tuple[int, set[int]]:
    """Evidence: path edges first (in path order), then the rest; the first edge over the
    budget withholds every later edge that has something to say."""
    order = list(dict.fromkeys(eid for _, edge_ids in result.paths for eid in edge_ids))
    order += [eid for eid in result.edges if eid not in set(order)]
    spent = 0
    for position, eid in enumerate(order):
        cost = approx_tokens(result.edges[eid])
        if spent + cost > result.limits.max_evidence_tokens:
            return spent, {e for e in order[position:] if approx_tokens(result.edges[e]) > 0}
        spent += cost
    return spent, set()


@PROPERTY
@given(spec=graphs())
def test_the_walk_follows_its_rules_on_random_graphs(spec, monkeypatch):
    with fresh_bank() as bank, monkeypatch.context() as patch:
        entries = build(bank, spec)
        now = timezone.now()  # after the edges are recorded
        log = HopLog(patch)
        start = entries[spec["start"]]
        result = traverse(bank, start, spec["plan"], spec["limits"], now, now)
        expected = reference(bank, start, spec, log.rows, now)
        body = result.as_json()
        walked_limits = [h for h in result.limits_hit if h in ("max_expansions", "max_depth")]
        assert list(result.depth.items()) == expected["depth"]
        assert result.parents == expected["parents"]
        assert set(result.edges) == expected["edges"]
        assert result.frontier == expected["frontier"]
        assert walked_limits == expected["limits_hit"]
        assert (result.expansions, result.edges_read) == (expected["expansions"], expected["read"])
        assert (result.evidence_tokens, result.withheld) == withheld_by_rule(result)
        titles = dict(Entry.objects.filter(bank=bank).values_list("pk", "title"))
        assert {pk: info.title for pk, info in result.nodes.items()} == {
            pk: titles[pk] for pk in result.depth
        }
        stamps = walk.Stamps()
        assert body["edges"] == {
            str(eid): result.edge_json(edge, stamps.__getitem__)
            for eid, edge in result.edges.items()
        }


def _hub(bank: Bank, spokes: int) -> Entry:
    """A hub citing ``spokes`` entries; every third spoke cites one more entry."""
    kind = EntryKind.objects.get(bank=None, name="fact")
    total = 1 + spokes + spokes // 3 + 1
    Entry.objects.bulk_create(
        Entry(bank=bank, kind=kind, short_id=f"{i:08x}", title=f"N{i}") for i in range(total)
    )
    pks = list(Entry.objects.filter(bank=bank, title__startswith="N").order_by("pk"))
    hub, spoke_entries, tails = pks[0], pks[1 : 1 + spokes], pks[1 + spokes :]
    cites = EdgeType.objects.get(bank=None, name="cites")
    links = [(hub, spoke) for spoke in spoke_entries]
    links += [(spoke_entries[3 * i], tail) for i, tail in enumerate(tails) if 3 * i < spokes]
    Edge.objects.bulk_create(
        Edge(bank=bank, from_entry=a, to_entry=b, type=cites) for a, b in links
    )
    return hub


@pytest.mark.parametrize("spokes", [80, 400])
def test_a_cut_walk_costs_three_statements_whatever_the_hub(bank, spokes, monkeypatch):
    """Vocabulary, the hop (budget + 1 rows), and the reached entries with the frontier
    probe of the next level: three statements for a hub of 80 edges or of 400."""
    hub = _hub(bank, spokes)
    limits = Limits(max_depth=3, max_expansions=50, max_paths=100)
    with CaptureQueriesContext(connection) as ctx:
        result = traverse(bank, hub, Step(("cites",)), limits)
    assert len(ctx.captured_queries) == 3
    assert result.limits_hit[0] == "max_expansions" and result.edges_read == 51
    # The frontier: the hub (its 51st edge proves it open) and every spoke reached that
    # cites an entry not reached.
    onward = {
        a
        for a, b in Edge.objects.filter(bank=bank).values_list("from_entry_id", "to_entry_id")
        if a != hub.pk and b not in result.depth
    }
    assert result.frontier == [pk for pk in result.depth if pk == hub.pk or pk in onward]
    assert len(result.frontier) > 1
    # The long-list form of the exclusion (a constant array) gives the same answer.
    monkeypatch.setattr(reads, "_SUBPLAN_IDS", 0)
    again = traverse(bank, hub, Step(("cites",)), limits, result.valid_at, result.as_of)
    assert again.as_json() == result.as_json()


@pytest.mark.parametrize("relations", [1, 2, 3])
def test_the_edge_filter_made_from_stand_ins_is_the_one_the_orm_compiles(bank, relations):
    """The walk's filter comes from a template compiled once with stand-in values: the SQL
    and the parameters must be what compiling the ORM's filter for the walk gives."""
    as_of = dt.datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=dt.UTC)
    valid_at = dt.datetime(2025, 1, 2, tzinfo=dt.UTC)
    type_ids = [3, 7, 11][:relations]
    edge_reads = reads.EdgeReads(bank.pk, as_of, valid_at, None)
    assert reads._filter_template(relations) is not None  # the fast path is the one taken
    assert edge_reads.where(type_ids) == reads.edge_filter(bank.pk, type_ids, as_of, valid_at)


def test_the_pipelined_last_statement_gives_the_answer_a_plain_one_gives(bank, monkeypatch):
    """The walk's last statement is sent in pipeline mode and read after the edges, paths,
    evidence and the answer's edges are made: the same answer as with a driver without
    pipelines (statement read at once), and the same answer from a second ``as_json``."""
    hub = _hub(bank, 120)
    limits = Limits(max_depth=3, max_expansions=60, max_paths=30, max_evidence_tokens=10)
    piped = traverse(bank, hub, Step(("cites",), "both"), limits)
    first = piped.as_json()
    assert first == piped.as_json()
    assert first["limits_hit"][0] == "max_expansions" and len(first["frontier"]) > 1
    connection.ensure_connection()
    monkeypatch.setattr(type(connection.connection), "pipeline", None)
    with CaptureQueriesContext(connection) as ctx:
        plain = traverse(bank, hub, Step(("cites",), "both"), limits, piped.valid_at, piped.as_of)
    assert plain.as_json() == first
    assert len(ctx.captured_queries) == 3
