"""Metamorphic properties of traversals (``004_*`` 12.8), on generated graphs (hypothesis).

- Adding an unrelated entity changes nothing.
- Adding an expired edge changes no present-time answer (not even the counts: time is a
  predicate of each hop's SQL, so the expired edge is never read).
- An alias in place of the canonical start gives the same answer.
- On a complete traversal (not truncated), tightening max_depth never adds a result: every
  entry, edge and path of the shallower walk is in (or a prefix of a path of) the deeper one.

Each example builds a bank of its own inside a savepoint that is rolled back afterwards.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator

import pytest
from django.db import transaction
from hypothesis import assume, given
from hypothesis import strategies as st

from graph.actions.traverse import TraverseGraph
from graph.edges.links import link
from graph.resolution.aliases import add_alias
from graph.traversal.walk import Limits, Step, traverse
from kb.actions.base import Caller
from kb.errors import Conflict
from kb.models import Bank, Entry
from kb.services.entries import clean_entry_data, create_entry
from tests.property_settings import property_settings

pytestmark = pytest.mark.django_db

PROPERTY = property_settings(25)
RELATIONS = ["part_of", "cites", "see_also", "owned_by"]
# Valid intervals: mostly open; some ended, some not begun yet, some around now.
VALIDITY = [
    (None, None),
    (None, None),
    (None, None),
    ("2020-01-01", None),
    (None, "2021-01-01"),
    ("2999-01-01", None),
    ("2019-06-01T12:30:00+00:00", "2999-01-01"),
]
BIG = Limits(max_expansions=100_000, max_paths=10_000, max_evidence_tokens=1_000_000)

_banks = itertools.count(1)


@st.composite
def walks(draw) -> dict:
    """A graph of 4–10 entries and 0–30 edges, a start, and a plan (relations, direction, depth)."""
    n = draw(st.integers(4, 10))
    index = st.integers(0, n - 1)
    edges = draw(
        st.lists(
            st.tuples(index, index, st.sampled_from(RELATIONS), st.sampled_from(VALIDITY)).filter(
                lambda e: e[0] != e[1]
            ),
            max_size=30,
        )
    )
    return {
        "n": n,
        "edges": edges,
        "start": draw(index),
        "relations": tuple(
            draw(st.lists(st.sampled_from(RELATIONS), min_size=1, max_size=2, unique=True))
        ),
        "direction": draw(st.sampled_from(["out", "in", "both"])),
        "depth": draw(st.integers(1, 4)),
        "extra": draw(st.tuples(index, index, st.sampled_from(RELATIONS))),
    }


@contextlib.contextmanager
def fresh_bank() -> Iterator[Bank]:
    with transaction.atomic():
        number = next(_banks)
        yield Bank.objects.create(slug=f"walk-{number}", name=f"Walk bank {number}")
        transaction.set_rollback(True)


def new_entry(bank: Bank, title: str) -> Entry:
    data = {"title": title, "content": f"About {title}.", "lifetime": {"durable": True}}
    return create_entry(bank, clean_entry_data(bank, data), allow_duplicate=True)


def connect(bank: Bank, a: Entry, b: Entry, relation: str, valid=(None, None)) -> None:
    payload = {"from": a.short_id, "to": b.short_id, "relation": relation}
    with contextlib.suppress(Conflict):  # the triple is already believed over that time
        link(bank, {**payload, "valid_from": valid[0], "valid_to": valid[1]})


def build(bank: Bank, spec: dict) -> list[Entry]:
    entries = [new_entry(bank, f"Entry {i} of {bank.slug}") for i in range(spec["n"])]
    for a, b, relation, valid in spec["edges"]:
        connect(bank, entries[a], entries[b], relation, valid)
    return entries


def walk(bank: Bank, start: Entry, spec: dict, depth: int | None = None):
    limits = Limits(
        depth or spec["depth"], BIG.max_expansions, BIG.max_paths, BIG.max_evidence_tokens
    )
    return traverse(bank, start, Step(spec["relations"], spec["direction"]), limits)


def answer(result) -> dict:
    """Everything a caller is told, less the instants of "now" in ``searched``."""
    body = result.as_json()
    keep = ("start", "paths", "nodes", "edges", "truncated", "limits_hit", "frontier", "counts")
    return {key: body[key] for key in keep}


@PROPERTY
@given(spec=walks())
def test_an_unrelated_entity_changes_nothing(spec):
    with fresh_bank() as bank:
        entries = build(bank, spec)
        start = entries[spec["start"]]
        before = answer(walk(bank, start, spec))
        # A new entity joined to the graph only by a relation outside the allow-list, and to
        # a second new entity by an allowed one.
        outsider, friend = new_entry(bank, "Outsider"), new_entry(bank, "Outsider's friend")
        connect(bank, outsider, friend, spec["relations"][0])
        unused = [r for r in RELATIONS if r not in spec["relations"]][0]
        connect(bank, entries[spec["extra"][0]], outsider, unused)
        connect(bank, outsider, entries[spec["extra"][1]], unused)
        assert answer(walk(bank, start, spec)) == before


@PROPERTY
@given(spec=walks())
def test_an_expired_edge_changes_no_present_answer(spec):
    with fresh_bank() as bank:
        entries = build(bank, spec)
        start = entries[spec["start"]]
        before = answer(walk(bank, start, spec))
        a, b, _ = spec["extra"]
        if a == b:
            b = (a + 1) % spec["n"]
        # An allowed relation, from the start or anywhere, that ended in the past.
        connect(bank, entries[a], entries[b], spec["relations"][0], ("2019-01-01", "2020-06-01"))
        connect(
            bank,
            start,
            entries[b if b != spec["start"] else a],
            spec["relations"][-1],
            (None, "2021-01-01"),
        )
        assert answer(walk(bank, start, spec)) == before


def walk_of(bank, body: dict):
    """The traversal the traverse action runs for ``body`` (its declaration checks it)."""
    return TraverseGraph.prepare(Caller.system(via="command"), bank, body=body).execute()


@PROPERTY
@given(spec=walks())
def test_an_alias_in_place_of_the_start_gives_the_same_answer(spec):
    with fresh_bank() as bank:
        entries = build(bank, spec)
        start = entries[spec["start"]]
        add_alias(bank, start, f"the {bank.slug} starting point")
        body = {"relations": list(spec["relations"]), "direction": spec["direction"]}
        body.update(max_depth=spec["depth"], max_expansions=100_000, max_paths=10_000)
        body["max_evidence_tokens"] = 1_000_000
        by_id = walk_of(bank, {**body, "start": start.short_id})
        by_alias = walk_of(
            bank, {**body, "start": {"name": f"The {bank.slug.upper()} starting-point"}}
        )
        assert by_alias.start_matched == "alias"
        assert answer(by_alias) == answer(by_id)


@PROPERTY
@given(spec=walks())
def test_tightening_max_depth_never_adds_a_result(spec):
    with fresh_bank() as bank:
        entries = build(bank, spec)
        start = entries[spec["start"]]
        deep = walk(bank, start, spec, depth=4)
        assume(not deep.truncated)  # only complete traversals are compared (004_* 12.8)
        deep_body = deep.as_json()
        deep_paths = [tuple(p["nodes"]) for p in deep_body["paths"]]
        for depth in range(1, 4):
            shallow = walk(bank, start, spec, depth=depth).as_json()
            assert set(shallow["nodes"]) <= set(deep_body["nodes"])
            assert set(shallow["edges"]) <= set(deep_body["edges"])
            for path in shallow["paths"]:
                nodes = tuple(path["nodes"])
                assert any(full[: len(nodes)] == nodes for full in deep_paths), nodes
            if not shallow["truncated"]:
                assert shallow["nodes"] == deep_body["nodes"]  # nothing further to reach
