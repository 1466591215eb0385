"""The "current edge" rule (graph/edges/current.py): its SQL, ORM and Python spellings select
the same edges on random edges and instants, the half-open boundaries included."""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graph.edges.current import current_edge_sql, current_q, edge_is_current
from graph.edges.vocab import edge_type
from graph.models import Edge
from graph.retrieval import facts, fold, ppr

pytestmark = pytest.mark.django_db

# A small grid of instants, so that generated bounds and instants coincide often: the
# boundary cases (valid_from == t, valid_to == t) are the ones a spelling gets wrong.
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
GRID = [T0 + dt.timedelta(hours=h) for h in range(5)]
RECORDED = T0 - dt.timedelta(days=1)
instants = st.sampled_from(GRID)
maybe = st.none() | instants


@st.composite
def edge_times(draw):
    """(invalidated_at, valid_from, valid_to) with valid_from < valid_to when both are set."""
    valid_from, valid_to = draw(maybe), draw(maybe)
    if valid_from is not None and valid_to is not None and valid_from >= valid_to:
        valid_from, valid_to = (
            (None, valid_to) if valid_from == valid_to else (valid_to, valid_from)
        )
    return draw(maybe), valid_from, valid_to


@pytest.fixture
def chain(make_entry, hashing_embedder):
    """Nine entries; edge i joins entries i and i+1, so no two edges share (from, to)."""
    return [make_entry(f"Stop {i}") for i in range(9)]


@settings(
    max_examples=int(os.environ.get("KB_PROPERTY_EXAMPLES", "60")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(times=st.lists(edge_times(), min_size=1, max_size=8), at=instants)
def test_sql_orm_and_python_agree_on_which_edges_are_current(bank, chain, times, at):
    see_also = edge_type(bank, "see_also")
    sid = transaction.savepoint()
    try:
        edges = [
            Edge.objects.create(
                bank=bank,
                from_entry=chain[i],
                to_entry=chain[i + 1],
                type=see_also,
                recorded_at=RECORDED,
                invalidated_at=invalidated_at,
                valid_from=valid_from,
                valid_to=valid_to,
            )
            for i, (invalidated_at, valid_from, valid_to) in enumerate(times)
        ]
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT e.id FROM graph_edge e WHERE e.bank_id = %(bank)s AND "
                + current_edge_sql("e", "%(now)s"),
                {"bank": bank.pk, "now": at},
            )
            by_sql = {pk for (pk,) in cursor.fetchall()}
        by_orm = set(
            Edge.objects.filter(bank=bank).filter(current_q(at)).values_list("pk", flat=True)
        )
        by_python = {e.pk for e in edges if e.is_current(at)}
        assert by_sql == by_orm == by_python
        # A retrieval statement built on the fragment (PPR's closing read) agrees too.
        with connection.cursor() as cursor:
            cursor.execute(
                ppr._CLOSING_SQL,
                {"bank": bank.pk, "now": at, "frontier": [e.pk for e in chain], "per_hop": 100},
            )
            assert {row[0] for row in cursor.fetchall()} == by_python
        # The rule itself, stated once more by hand: believed, and at in [valid_from, valid_to).
        expected = {
            e.pk
            for e in edges
            if e.invalidated_at is None
            and (e.valid_from is None or e.valid_from <= at)
            and (e.valid_to is None or at < e.valid_to)
        }
        assert by_python == expected
    finally:
        transaction.savepoint_rollback(sid)


def test_the_interval_is_half_open():
    start, end = GRID[1], GRID[3]
    assert edge_is_current(None, start, end, start)  # from is inside
    assert not edge_is_current(None, start, end, end)  # to is outside
    assert not edge_is_current(GRID[0], None, None, GRID[2])  # invalidated: never current


def test_the_sql_fragment_takes_only_an_alias_and_a_placeholder():
    assert current_edge_sql("ed", "%s").startswith("ed.invalidated_at IS NULL")
    with pytest.raises(ValueError):
        current_edge_sql("e; DROP TABLE graph_edge", "%(now)s")
    with pytest.raises(ValueError):
        current_edge_sql("e", "'2026-01-01'")


ROOT = Path(__file__).resolve().parents[2]
# The valid-time half of the rule as hand-written SQL spells it (any alias, any placeholder).
HAND_SPELLED = re.compile(
    r"valid_to IS NULL OR (\w+\.)?valid_to >|valid_from IS NULL OR (\w+\.)?valid_from <="
)


def test_the_rule_is_spelled_once_in_the_product():
    """Every hand-written statement takes the rule from ``current_edge_sql``: no product
    module (migrations aside) spells it again."""
    spelled = [
        str(path.relative_to(ROOT))
        for package in ("kb", "graph", "workflows", "explorer", "mcpserver")
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
        and path.name != "current.py"
        and HAND_SPELLED.search(path.read_text())
    ]
    assert spelled == []
    fragment = current_edge_sql("e", "%(now)s")
    assert fragment in ppr._HOP_SQL and fragment in ppr._CLOSING_SQL
    assert current_edge_sql("e", "%(at)s") in facts._LEXICAL_SQL
    assert current_edge_sql("ed", "%(now)s") in fold._CURRENT
