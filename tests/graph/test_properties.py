"""Properties of curation and bulk data over random small graphs (hypothesis).

Each example builds its own bank (unique slug) inside a savepoint that is rolled back at the
end, so examples never see each other's rows although the ``db`` transaction spans them all.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator

import networkx as nx
import pytest
from django.db import transaction
from hypothesis import example, given
from hypothesis import strategies as st

from graph.curation.delete import delete_entry
from graph.curation.merge import merge_entries
from graph.curation.revert import revert_operation
from graph.edges.links import current_q, link, retype, unlink
from graph.models import Alias, Edge
from graph.resolution.aliases import add_alias
from kb.errors import Conflict
from kb.models import Bank, Entry, Operation
from kb.services.bulk import export_lines, import_bank
from kb.services.entries import clean_entry_data, create_entry, update_entry
from tests.property_settings import property_settings

pytestmark = pytest.mark.django_db

PROPERTY = property_settings(25, shrink_on_request=True)

# Transitive (part_of, precedes) and non-transitive (cites, corrects, see_also) core relations.
RELATIONS = ["part_of", "precedes", "cites", "corrects", "see_also"]
NOTES = ["", "Read before changing the schedule.", "Explains the failure mode.", "Background."]
EVIDENCE = [{}, {"text": "ticket OPS-12"}, {"doc": "runbook", "section": 3}]
# Valid intervals: mostly open; some ended, some not yet begun, some bounded around now.
VALIDITY = [
    (None, None),
    (None, None),
    (None, None),
    ("2020-01-01", None),
    ("2019-06-01T12:30:00+00:00", "2999-01-01"),
    (None, "2021-01-01"),
    ("2999-01-01", None),
]
# What happens to an edge after it is linked: nothing, retracted, or retyped.
FATES = ["keep", "keep", "keep", "keep", "unlink", "retype"]
CONTENTS = [
    "How the nightly billing export is scheduled and retried.",
    "The reports service reads from the replica, never the primary.",
    "Rollback steps for a failed deploy of the search cluster.",
    "",
]
STATUSES = ["live", "live", "live", "live", "retired", "done"]

_banks = itertools.count(1)


def edge_specs(n: int, max_size: int):
    index = st.integers(0, n - 1)
    return st.lists(
        st.tuples(
            index,
            index,
            st.sampled_from(RELATIONS),
            st.sampled_from(NOTES),
            st.sampled_from(VALIDITY),
            st.sampled_from(EVIDENCE),
            st.sampled_from(FATES),
        ).filter(lambda e: e[0] != e[1]),
        max_size=max_size,
    )


@st.composite
def graph_specs(draw) -> dict:
    """5–12 entries (some keyed, aliased, retired or done) and 0–25 edges between them.

    Besides random edges, the spec draws the shapes curation must get right: the same triple
    again over another valid time, and two-hop paths X→B→Y with a shortcut X→Y of the hops'
    relation or see_also (current or not), which a delete of B must bridge around.
    """
    n = draw(st.integers(5, 12))
    entries = [
        {
            "key": draw(st.sampled_from([None, None, f"svc:e{i}"])),
            "content": draw(st.sampled_from(CONTENTS)),
            "status": draw(st.sampled_from(STATUSES)),
            "aliases": draw(st.lists(st.sampled_from(["x", "y"]), max_size=2, unique=True)),
        }
        for i in range(n)
    ]
    edges = draw(edge_specs(n, 16))
    for i, validity in draw(
        st.lists(st.tuples(st.integers(0, 15), st.sampled_from(VALIDITY)), max_size=3)
    ):
        if i < len(edges):
            edges.append(edges[i][:4] + (validity,) + edges[i][5:])
    index = st.integers(0, n - 1)
    middles = []
    for x, b, y in draw(st.lists(st.tuples(index, index, index), max_size=2)):
        if len({x, b, y}) < 3:
            continue
        first, second = draw(st.sampled_from(RELATIONS)), draw(st.sampled_from(RELATIONS))
        second = draw(st.sampled_from([first, second]))
        shortcut = draw(st.sampled_from([first, "see_also"]))
        edges += [
            (x, b, first, "", (None, None), {}, "keep"),
            (b, y, second, "", (None, None), {}, "keep"),
            (x, y, shortcut, "", draw(st.sampled_from(VALIDITY)), {}, "keep"),
        ]
        middles.append(b)
    return {"entries": entries, "edges": edges, "middles": middles}


def spec_of(n: int, edges: list[tuple]) -> dict:
    """A hand-written spec: ``n`` plain live entries and edges (a, b, relation, validity)."""
    return {
        "entries": [{"key": None, "content": "", "status": "live", "aliases": []}] * n,
        "edges": [(a, b, rel, "", validity, {}, "keep") for a, b, rel, validity in edges],
    }


ENDED = (None, "2021-01-01")
FUTURE = ("2999-01-01", None)
OPEN = (None, None)


@st.composite
def graph_and_pair(draw) -> tuple[dict, int, int]:
    spec = draw(graph_specs())
    n = len(spec["entries"])
    keep = draw(st.integers(0, n - 1))
    away = draw(st.integers(0, n - 1).filter(lambda i: i != keep))
    return spec, keep, away


@st.composite
def graph_and_entry(draw) -> tuple[dict, int]:
    spec = draw(graph_specs())
    anywhere = st.integers(0, len(spec["entries"]) - 1)
    if spec["middles"]:
        return spec, draw(st.one_of(anywhere, st.sampled_from(spec["middles"])))
    return spec, draw(anywhere)


@contextlib.contextmanager
def fresh_bank() -> Iterator[Bank]:
    """A bank of its own for one example; everything it wrote is rolled back afterwards."""
    with transaction.atomic():
        number = next(_banks)
        yield Bank.objects.create(slug=f"prop-{number}", name=f"Property bank {number}")
        transaction.set_rollback(True)


def build(bank: Bank, spec: dict) -> list[Entry]:
    """Write the spec through the services, as agents would (links that clash are skipped)."""
    entries = []
    for i, item in enumerate(spec["entries"]):
        data = {"title": f"Entry {i} of {bank.slug}", "content": item["content"]}
        data["lifetime"] = {"durable": True}
        if item["key"]:
            data["key"] = item["key"]
        entry = create_entry(bank, clean_entry_data(bank, data), allow_duplicate=True)
        for tag in item["aliases"]:
            add_alias(bank, entry, f"{bank.slug} alias {tag} {i}")
        if item["status"] != "live":
            entry = update_entry(bank, entry, {"status": item["status"]})
        entries.append(entry)
    for a, b, relation, note, (valid_from, valid_to), evidence, fate in spec["edges"]:
        payload = {
            "from": entries[a].short_id,
            "to": entries[b].short_id,
            "relation": relation,
            "note": note,
            "evidence": evidence,
            "valid_from": valid_from,
            "valid_to": valid_to,
        }
        try:
            edge = link(bank, payload)
        except Conflict:
            continue  # the triple is already believed over that valid time
        if fate == "unlink":
            unlink(bank, edge.pk, "no longer holds")
        elif fate == "retype":
            other = RELATIONS[(RELATIONS.index(relation) + 1) % len(RELATIONS)]
            with contextlib.suppress(Conflict):
                retype(bank, edge.pk, other, "wrong relation")
    return entries


def snapshot(bank: Bank) -> dict:
    """Every row a revert must restore, with every column: entries (all tracked fields),
    edges (ends, type, note, evidence, both clocks, replaces …) and aliases."""
    entry_fields = [f.attname for f in Entry.history.model.tracked_fields]
    return {
        "entries": {
            row["id"]: row
            for row in Entry.objects.filter(bank=bank).order_by("pk").values(*entry_fields)
        },
        "edges": {row["id"]: row for row in Edge.objects.filter(bank=bank).values()},
        "aliases": {row["id"]: row for row in Alias.objects.filter(bank=bank).values()},
    }


def current_graph(bank: Bank, nodes) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from(
        Edge.objects.filter(bank=bank).filter(current_q()).values_list("from_entry", "to_entry")
    )
    return graph


def current_triples(bank: Bank) -> set[tuple[int, int, str]]:
    return set(
        Edge.objects.filter(bank=bank)
        .filter(current_q())
        .values_list("from_entry", "to_entry", "type__name")
    )


@PROPERTY
@given(case=graph_and_pair())
# keep's own keep→0 cites ended in 2021; away's away→0 cites is current: it must survive.
@example(case=(spec_of(5, [(4, 0, "cites", OPEN), (3, 0, "cites", ENDED)]), 3, 4))
def test_merge_keeps_connections_and_revert_restores_the_exact_state(case):
    spec, keep_i, away_i = case
    with fresh_bank() as bank:
        entries = build(bank, spec)
        keep, away = entries[keep_i], entries[away_i]
        before = snapshot(bank)
        moved = {
            (keep.pk if a == away.pk else a, keep.pk if b == away.pk else b, relation)
            for a, b, relation in current_triples(bank)
            if away.pk in (a, b)
        }
        result = merge_entries(bank, keep.short_id, away.short_id, "duplicates")
        merged = snapshot(bank)
        assert merged["entries"][away.pk]["status"] == "merged"
        assert merged["entries"][away.pk]["merged_into_id"] == keep.pk
        after = current_triples(bank)
        assert not [t for t in after if away.pk in t[:2]], "a current edge still touches away"
        lost = sorted(t for t in moved if t[0] != t[1] and t not in after)
        assert not lost, f"current edges of away with no current counterpart on keep: {lost}"
        revert_operation(bank, result.operation.pk, "wrong merge")
        assert snapshot(bank) == before
        assert Operation.objects.get(pk=result.operation.pk).reverted_by_id is not None


@PROPERTY
@given(case=graph_and_entry())
# 0→1→2 part_of, and a 0→2 part_of that ended in 2021: deleting 1 must keep 0 reaching 2.
@example(
    case=(
        spec_of(5, [(0, 1, "part_of", OPEN), (1, 2, "part_of", OPEN), (0, 2, "part_of", ENDED)]),
        1,
    )
)
def test_delete_bridges_preserve_reachability(case):
    spec, doomed_i = case
    with fresh_bank() as bank:
        entries = build(bank, spec)
        doomed = entries[doomed_i].pk
        others = [e.pk for e in entries if e.pk != doomed]
        before = current_graph(bank, [e.pk for e in entries])
        through = {
            (x, y) for x in before.predecessors(doomed) for y in before.successors(doomed) if x != y
        }
        delete_entry(bank, entries[doomed_i].short_id, "obsolete")
        after = current_graph(bank, others)
        assert doomed not in after, "the deleted entry still has current edges"
        missing = sorted(pair for pair in through if not after.has_edge(*pair))
        assert not missing, f"X→B→Y paths without a current X→Y edge after the delete: {missing}"
        for x in others:
            reach_before = nx.descendants(before, x) - {doomed}
            assert nx.descendants(after, x) == reach_before, f"reachability from {x} changed"


@PROPERTY
@given(case=graph_and_entry())
def test_revert_of_a_delete_restores_the_exact_state(case):
    spec, doomed_i = case
    with fresh_bank() as bank:
        entries = build(bank, spec)
        before = snapshot(bank)
        result = delete_entry(bank, entries[doomed_i].short_id, "obsolete")
        assert snapshot(bank)["entries"][entries[doomed_i].pk]["status"] == "deleted"
        revert_operation(bank, result.operation.pk, "deleted by mistake")
        assert snapshot(bank) == before


def bank_state(bank: Bank) -> dict:
    """What a bank holds, independent of database ids and of when rows were written: entries
    by short_id (every exported field; references by short_id), the edges believed now (ends,
    relation, note, label, evidence, source, valid time) and aliases (entry, surface, source)."""
    entries = {}
    rows = Entry.objects.filter(bank=bank).exclude(status__in=["merged", "deleted"])
    for e in rows.select_related("kind", "resolved_by").order_by("short_id"):
        entries[e.short_id] = {
            "key": e.key,
            "title": e.title,
            "content": e.content,
            "summary": e.summary,
            "useful_for": e.useful_for,
            "systems": e.systems,
            "tasks": e.tasks,
            "metadata": e.metadata,
            "kind": e.kind.name,
            "status": e.status,
            "steps": e.steps,
            "anchor_files": e.anchor_files,
            "anchor_symbols": e.anchor_symbols,
            "durable": e.durable,
            "expires_at": e.expires_at,
            "resolved_by": e.resolved_by.short_id if e.resolved_by else None,
        }
    edges = sorted(
        [
            (
                e.from_entry.short_id,
                e.to_entry.short_id,
                e.type.name,
                e.note,
                e.label,
                repr(e.evidence),
                e.source,
                e.valid_from,
                e.valid_to,
            )
            for e in Edge.objects.filter(bank=bank, invalidated_at__isnull=True)
            .filter(from_entry__short_id__in=entries, to_entry__short_id__in=entries)
            .select_related("from_entry", "to_entry", "type")
        ],
        key=repr,
    )
    aliases = sorted(
        (a.entry.short_id, a.surface, a.source)
        for a in Alias.objects.filter(bank=bank, entry__short_id__in=entries).select_related(
            "entry"
        )
    )
    return {"entries": entries, "edges": edges, "aliases": aliases}


@PROPERTY
@given(spec=graph_specs())
# One triple believed over two disjoint valid times: two edge lines for the same triple.
@example(spec=spec_of(5, [(0, 1, "see_also", ENDED), (0, 1, "see_also", FUTURE)]))
def test_export_then_import_into_an_empty_bank_reproduces_the_bank(spec):
    with fresh_bank() as source:
        build(source, spec)
        lines = list(export_lines(source))
        original = bank_state(source)
        assert len(original["entries"]) == len(spec["entries"])
        copy = Bank.objects.create(slug=f"{source.slug}-copy", name="Copy")
        result = import_bank(copy, "\n".join(lines))
        assert result["created"] == len(spec["entries"])
        # The database of the copy holds what the source's database holds — not merely what
        # the exporter prints twice.
        assert bank_state(copy) == original
        again = import_bank(copy, "\n".join(lines))
        assert again["operation"] is None, f"re-import changed something: {again}"
        assert bank_state(copy) == original
