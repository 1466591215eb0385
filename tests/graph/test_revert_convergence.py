"""Reverts converge: after any sequence of links, unlinks, retypes, merges, deletes and
reverts, reverting an operation either succeeds or names operations whose effects are still
in place; reverting those in the order given, then the original, succeeds (hypothesis)."""

from __future__ import annotations

import contextlib
import itertools

import pytest
from django.db import transaction
from hypothesis import given
from hypothesis import strategies as st

from graph.curation.delete import delete_entry
from graph.curation.merge import merge_entries
from graph.curation.revert import revert_operation
from graph.edges.links import link, retype, unlink
from kb.errors import Conflict, InvalidInput, KbError, NotFound
from kb.models import Bank, Operation
from kb.services.entries import clean_entry_data, create_entry
from tests.property_settings import property_settings

pytestmark = pytest.mark.django_db

PROPERTY = property_settings(30, shrink_on_request=True)
RELATIONS = ["see_also", "cites", "part_of"]
N = 5
_banks = itertools.count(1)

entry = st.integers(0, N - 1)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("link"), entry, entry, st.sampled_from(RELATIONS)),
        st.tuples(st.just("link"), entry, entry, st.sampled_from(RELATIONS)),
        st.tuples(st.just("unlink"), st.integers(0, 20)),
        st.tuples(st.just("retype"), st.integers(0, 20), st.sampled_from(RELATIONS)),
        st.tuples(st.just("merge"), entry, entry),
        st.tuples(st.just("delete"), entry),
        st.tuples(st.just("revert"), st.integers(0, 30)),
    ),
    min_size=1,
    max_size=14,
)


def run(bank: Bank, entries, step, edges: list[int], ops: list[int]) -> None:
    """Apply one step; a step the bank refuses (409/400) is simply skipped."""
    kind = step[0]
    with contextlib.suppress(Conflict, InvalidInput, NotFound):
        if kind == "link" and step[1] != step[2]:
            a, b = entries[step[1]], entries[step[2]]
            edge = link(bank, {"from": a, "to": b, "relation": step[3], "note": f"n{len(ops)}"})
            edges.append(edge.pk)
            ops.append(Operation.objects.filter(bank=bank).order_by("-pk").first().pk)
        elif kind == "unlink" and edges:
            edge = unlink(bank, edges[step[1] % len(edges)], "gone")
            ops.append(Operation.objects.filter(bank=bank).order_by("-pk").first().pk)
            del edge
        elif kind == "retype" and edges:
            edge = retype(bank, edges[step[1] % len(edges)], step[2], "wrong relation")
            edges.append(edge.pk)
            ops.append(Operation.objects.filter(bank=bank).order_by("-pk").first().pk)
        elif kind == "merge" and step[1] != step[2]:
            result = merge_entries(bank, entries[step[1]].short_id, entries[step[2]].short_id, "d")
            ops.append(result.operation.pk)
        elif kind == "delete":
            ops.append(delete_entry(bank, entries[step[1]].short_id, "obsolete").operation.pk)
        elif kind == "revert" and ops:
            ops.append(revert_operation(bank, ops[step[1] % len(ops)], "undo").operation.pk)


@PROPERTY
@given(sequence=steps, pick=st.integers(0, 100))
def test_reverting_the_named_operations_then_the_original_succeeds(sequence, pick):
    with transaction.atomic():
        number = next(_banks)
        bank = Bank.objects.create(slug=f"conv-{number}", name=f"Convergence {number}")
        entries = [
            create_entry(
                bank,
                clean_entry_data(
                    bank,
                    {"title": f"Entry {i} {number}", "content": "", "lifetime": {"durable": True}},
                ),
            )
            for i in range(N)
        ]
        edges: list[int] = []
        ops: list[int] = []
        for step in sequence:
            run(bank, entries, step, edges, ops)
        candidates = [pk for pk in ops if Operation.objects.get(pk=pk).reverted_by_id is None]
        if candidates:
            target = candidates[pick % len(candidates)]
            try:
                revert_operation(bank, target, "undo")
            except Conflict as exc:
                assert exc.code == "revert_conflict", exc.message
                named = exc.extra["operations"]
                assert named, f"a conflict that names nothing to revert: {exc.extra['rows']}"
                assert target not in named
                for other in named:
                    try:
                        revert_operation(bank, other, "undo first")
                    except KbError as inner:
                        raise AssertionError(
                            f"reverting named operation {other} (of {named}) for {target} "
                            f"failed: {inner.code} {inner.message} {inner.extra}"
                        ) from inner
                revert_operation(bank, target, "undo")
            assert Operation.objects.get(pk=target).reverted_by_id is not None
        transaction.set_rollback(True)
