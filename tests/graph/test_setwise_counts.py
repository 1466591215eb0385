"""Merge, revert, delete-with-bridging and split cost the same number of SQL statements at 10
and at 1,000 edges: set-wise writes with history rows, no statement per edge."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from graph.curation.delete import delete_entry
from graph.curation.edge_rows import append_edges
from graph.curation.merge import merge_entries
from graph.curation.revert import revert_operation
from graph.curation.split import split_entry
from graph.edges.vocab import edge_types_for_bank
from graph.models import Edge
from kb.history_rows import record_rows
from kb.models import Entry, EntryKind, OperationKind
from kb.unit_of_work import unit_of_work

pytestmark = pytest.mark.django_db

RELATIONS = ["see_also", "cites", "part_of", "precedes", "corrects"]


def hub(bank, n: int, tag: str):
    """keep and away; away has ``n`` current edges (in and out, a tenth duplicating one keep
    already has, two between keep and away), all written in one import with history."""
    kind = EntryKind.objects.get(bank=None, name="fact")
    types = edge_types_for_bank(bank)
    with unit_of_work(bank, OperationKind.IMPORT, reason="fixture"):
        others = n // 2 + 2
        entries = Entry.objects.bulk_create(
            [
                Entry(bank=bank, kind=kind, short_id=f"{tag}{i:07x}", title=f"{tag} {i}")
                for i in range(others + 2)
            ]
        )
        record_rows(Entry, [e.pk for e in entries], "+")
        keep, away, pool = entries[0], entries[1], entries[2:]
        rows, keep_rows = [], []
        for i in range(n - 2):
            other = pool[i // 2]
            relation = types[RELATIONS[i % len(RELATIONS)]]
            ends = (away, other) if i % 2 else (other, away)
            rows.append(
                Edge(
                    bank=bank,
                    from_entry=ends[0],
                    to_entry=ends[1],
                    type=relation,
                    note=f"away note {i}",
                )
            )
            if i % 10 == 0:  # keep has it already: it collapses, with both notes reported
                keep_end = (keep, other) if i % 2 else (other, keep)
                keep_rows.append(
                    Edge(
                        bank=bank,
                        from_entry=keep_end[0],
                        to_entry=keep_end[1],
                        type=relation,
                        note=f"keep note {i}",
                    )
                )
        rows.append(Edge(bank=bank, from_entry=keep, to_entry=away, type=types["cites"]))
        rows.append(Edge(bank=bank, from_entry=away, to_entry=keep, type=types["see_also"]))
        append_edges(rows + keep_rows)
    return keep, away


def count(call) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as ctx:
        result = call()
    return len(ctx.captured_queries), result


def merge_and_revert(bank, n: int, tag: str) -> tuple[int, int]:
    keep, away = hub(bank, n, tag)
    merged, result = count(lambda: merge_entries(bank, keep.short_id, away.short_id, "dupes"))
    assert result.edges_collapsed == len(range(0, n - 2, 10))
    assert len(result.self_loops_dropped) == 2
    assert result.edges_repointed == n - 2 - result.edges_collapsed
    assert len(result.collapsed) == result.edges_collapsed
    reverted, _ = count(lambda: revert_operation(bank, result.operation.pk, "undo"))
    believed = Edge.objects.filter(bank=bank, invalidated_at__isnull=True)
    assert believed.filter(from_entry=away).count() + believed.filter(to_entry=away).count() == n
    assert not believed.filter(evidence__has_key="merged_from").exists()
    return merged, reverted


def test_merge_and_revert_cost_the_same_statements_at_10_and_1000_edges(bank):
    small = merge_and_revert(bank, 10, "a")
    large = merge_and_revert(bank, 1000, "b")
    assert small == large, f"merge, revert: {small} statements at 10 edges, {large} at 1,000"
    assert small[0] <= 40 and small[1] <= 40


def star(bank, n: int, tag: str) -> Entry:
    """A centre with ``n - 2`` edges in (from a pool, five relations) and two part_of out."""
    kind = EntryKind.objects.get(bank=None, name="fact")
    types = edge_types_for_bank(bank)
    with unit_of_work(bank, OperationKind.IMPORT, reason="fixture"):
        entries = Entry.objects.bulk_create(
            [
                Entry(bank=bank, kind=kind, short_id=f"{tag}{i:07x}", title=f"{tag} {i}")
                for i in range(n + 1)
            ]
        )
        record_rows(Entry, [e.pk for e in entries], "+")
        centre, pool = entries[0], entries[1:]
        rows = [
            Edge(
                bank=bank,
                from_entry=pool[i],
                to_entry=centre,
                type=types[RELATIONS[i % len(RELATIONS)]],
                note=f"note {i}",
            )
            for i in range(n - 2)
        ]
        rows += [
            Edge(bank=bank, from_entry=centre, to_entry=pool[-1 - j], type=types["part_of"])
            for j in range(2)
        ]
        append_edges(rows)
    return centre


def split_revert_delete(bank, n: int, tag: str) -> tuple[int, int, int]:
    centre = star(bank, n, tag)
    current = Edge.objects.filter(bank=bank, invalidated_at__isnull=True)
    moves = {e.pk: i % 2 for i, e in enumerate(current.filter(to_entry=centre))}
    split, outcome = count(
        lambda: split_entry(
            bank,
            centre.short_id,
            [{"title": f"Part one {tag}"}, {"title": f"Part two {tag}"}],
            edges=moves,
            reason="two topics",
        )
    )
    assert len(outcome.moved) == len(moves) == n - 2
    undone, _ = count(lambda: revert_operation(bank, outcome.operation.pk, "undo split"))
    assert current.filter(to_entry=centre).count() == n - 2
    deleted, result = count(lambda: delete_entry(bank, centre.short_id, "obsolete"))
    assert result.bridged == 2 * (n - 2)
    return split, undone, deleted


def test_split_revert_and_delete_cost_the_same_statements_at_10_and_1000_edges(bank):
    small = split_revert_delete(bank, 10, "c")
    large = split_revert_delete(bank, 1000, "d")
    assert small == large, f"split, revert, delete: {small} at 10 edges, {large} at 1,000"
