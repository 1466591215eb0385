"""Traversals: the walk on hand-built graphs, its ceilings and the parameterised questions
(the REST contract is test_traverse_api)."""

from __future__ import annotations

import gc

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from graph.models import Edge, EdgeType
from graph.traversal import walk
from graph.traversal.questions import approvals_required_for, dependents_of, owners_of
from graph.traversal.walk import Limits, Step, traverse
from kb.errors import InvalidInput
from kb.models import Entry, EntryKind
from tests.graph.traverse_support import SIGN_OFF, Graph, define

pytestmark = pytest.mark.django_db


# --- the walk -------------------------------------------------------------------------------


def test_worked_example_counts_and_paths(bank, settlement, django_assert_num_queries):
    g = settlement
    # vocabulary (1) + one statement per hop (4) + the reached entries (1)
    with django_assert_num_queries(6):
        result = traverse(bank, g["Settlement connector"], SIGN_OFF)
    body = result.as_json()
    assert body["counts"]["expansions"] == 13  # 3 + 3 + 2 + 5 edge records read
    assert (
        body["counts"]["nodes"] == 11
    )  # 1 connector + 3 services + 2 teams + 2 policies + 3 roles
    assert body["counts"]["edges"] == 13
    assert body["counts"]["paths"] == 7  # the seven service-to-role paths
    assert body["truncated"] is False and body["limits_hit"] == [] and body["frontier"] == []
    expected = {
        (svc, team, policy, role)
        for svc, team, policy, roles in [
            ("Reports", "Analytics", "Policy A", ["Service owner", "Risk approver"]),
            ("Dashboard API", "Analytics", "Policy A", ["Service owner", "Risk approver"]),
            (
                "Nightly ETL",
                "Platform",
                "Policy B",
                ["Service owner", "Change manager", "Risk approver"],
            ),
        ]
        for role in roles
    }
    got = {tuple(titles[1:]) for titles in g.path_titles(result)}
    assert got == expected
    assert all(titles[0] == "Settlement connector" for titles in g.path_titles(result))
    # Every path's edges join its nodes in order, and are described in "edges".
    for path in body["paths"]:
        assert len(path["edges"]) == len(path["nodes"]) - 1 == 4
        for i, eid in enumerate(path["edges"]):
            edge = body["edges"][str(eid)]
            assert {edge["from"], edge["to"]} == {path["nodes"][i], path["nodes"][i + 1]}
    first_hop = body["edges"][str(body["paths"][0]["edges"][0])]
    assert (
        first_hop["relation"] == "depends_on"
        and first_hop["to"] == g["Settlement connector"].short_id
    )
    assert first_hop["note"] == "Breaks without it." and first_hop["recorded_at"]


def test_query_count_grows_with_depth_not_with_nodes(bank, g):
    def fan(prefix: str, width: int) -> Entry:
        (root,) = g.add(f"{prefix} root")
        for i in range(width):
            g.link(f"{prefix} root", f"{prefix} {i}", "part_of")
            g.link(f"{prefix} {i}", f"{prefix} {i} leaf", "part_of")
            g.link(f"{prefix} {i} leaf", f"{prefix} {i} end", "part_of")
        return root

    narrow, wide = fan("narrow", 1), fan("wide", 25)

    def statements(start: Entry, depth: int) -> int:
        with CaptureQueriesContext(connection) as ctx:
            traverse(bank, start, Step(("part_of",)), Limits(max_depth=depth, max_paths=100))
        return len(ctx.captured_queries)

    for depth in (1, 2, 3):
        assert statements(narrow, depth) == statements(wide, depth)
    assert statements(wide, 3) == statements(wide, 2) + 1 == statements(wide, 1) + 2
    result = traverse(bank, wide, Step(("part_of",)), Limits(max_depth=3, max_paths=100))
    assert result.truncated is False
    assert result.as_json()["counts"]["nodes"] == 76 and len(result.paths) == 25


def test_directions_out_in_both(bank, g):
    g.link("A", "B", "cites")
    g.link("C", "A", "cites")
    g.link("B", "D", "see_also")  # another relation: never crossed

    def reached(direction: str) -> set[str]:
        result = traverse(bank, g["A"], [Step(("cites",), direction)])
        return {t[-1] for t in g.path_titles(result)}

    assert reached("out") == {"B"}
    assert reached("in") == {"C"}
    assert reached("both") == {"B", "C"}
    result = traverse(bank, g["A"], [Step(("cites",), "in")])
    (edge,) = result.as_json()["edges"].values()
    assert (edge["from"], edge["to"]) == (g["C"].short_id, g["A"].short_id)  # as stored


def test_each_hop_has_its_own_allow_list(bank, g):
    define(bank, "governed_by")
    g.link("Svc", "Team", "owned_by")
    g.link("Svc", "Doc", "cites")
    g.link("Team", "Policy", "governed_by")
    g.link("Team", "Other team", "owned_by")  # owned_by is not allowed on hop 2
    result = traverse(bank, g["Svc"], [Step(("owned_by",)), Step(("governed_by",))])
    assert g.path_titles(result) == [["Svc", "Team", "Policy"]]
    assert result.expansions == 2


def test_all_parents_at_the_same_depth_are_kept(bank, g):
    for mid in ("A", "B", "C"):
        g.link("S", mid)
        g.link(mid, "Shared")
    result = traverse(bank, g["S"], Step(("see_also",)), Limits(max_depth=2))
    assert sorted(g.path_titles(result)) == [
        ["S", "A", "Shared"],
        ["S", "B", "Shared"],
        ["S", "C", "Shared"],
    ]
    assert len(result.parents[g["Shared"].pk]) == 3
    assert result.as_json()["counts"]["nodes"] == 5


def test_a_node_reached_earlier_is_not_reparented_and_ends_where_the_walk_stops(bank, g):
    g.link("S", "A")
    g.link("S", "B")
    g.link("A", "B")  # B is already at depth 1: not a child of A
    g.link("B", "C")
    g.link("C", "S")  # back to the start: the visited set ends the cycle
    result = traverse(bank, g["S"], Step(("see_also",)), Limits(max_depth=5))
    assert sorted(g.path_titles(result)) == [["S", "A"], ["S", "B", "C"]]
    assert result.truncated is False  # nothing left to reach


def test_start_without_allowed_edges_gives_no_path_and_says_what_was_searched(bank, g):
    g.link("Lonely", "Friend", "cites")
    result = traverse(bank, g["Lonely"], [Step(("corrects",), "both")], valid_at=None)
    body = result.as_json()
    assert body["paths"] == [] and body["truncated"] is False
    assert body["counts"] == {
        "expansions": 0,
        "nodes": 1,
        "edges": 0,
        "paths": 0,
        "paths_found": 0,
        "read": 0,
        "evidence_tokens": 0,
    }
    searched = body["searched"]
    assert searched["bank"] == "acme" and searched["start"]["id"] == g["Lonely"].short_id
    assert searched["steps"] == [{"relations": ["corrects"], "direction": "both"}]
    assert searched["valid_at"] and searched["as_of"] and searched["truncated"] is False


# --- ceilings -------------------------------------------------------------------------------


def test_max_paths_cuts_and_says_so(bank, g):
    for i in range(10):
        g.link("Hub", f"Leaf {i}")
    result = traverse(bank, g["Hub"], [Step(("see_also",))], Limits(max_paths=3))
    body = result.as_json()
    assert len(body["paths"]) == 3 and body["counts"]["paths_found"] == 10
    assert body["truncated"] is True and body["limits_hit"] == ["max_paths"]
    assert body["counts"]["nodes"] == 11  # the walk itself was complete


def test_max_expansions_cuts_the_walk_and_names_the_frontier(bank, g):
    g.link("S", "A")
    g.link("S", "B")
    for i in range(10):
        g.link("A", f"A{i}")
    g.link("B", "B0")
    result = traverse(bank, g["S"], Step(("see_also",)), Limits(max_depth=3, max_expansions=5))
    body = result.as_json()
    assert body["truncated"] is True and body["limits_hit"] == ["max_expansions"]
    assert body["counts"]["expansions"] == 5 and body["counts"]["read"] == 6
    frontier = {result.nodes[pk].title for pk in result.frontier}
    # Hop 2 read 4 of the 11 edges of A and B (in no particular order) and expanded 3: A's
    # expansion was cut for sure; B's only if B -> B0 was not among the three. The leaves
    # reached have nothing onward, so they are not in the frontier.
    reached = {info.title for info in result.nodes.values()}
    assert frontier == ({"A"} if "B0" in reached else {"A", "B"})
    assert len(reached) == 1 + 2 + 3


def test_hub_reads_at_most_the_budget_plus_one(bank):
    """A hub of 300 edges and a budget of 50: the hop asks for 51 rows, and reads 51."""
    kind = EntryKind.objects.get(bank=None, name="fact")
    Entry.objects.bulk_create(
        Entry(bank=bank, kind=kind, short_id=f"{i:08x}", title=f"Node {i}") for i in range(301)
    )
    ids = dict(Entry.objects.filter(bank=bank).values_list("short_id", "pk"))
    cites = EdgeType.objects.get(bank=None, name="cites")
    Edge.objects.bulk_create(
        Edge(bank=bank, from_entry_id=ids[f"{0:08x}"], to_entry_id=ids[f"{i:08x}"], type=cites)
        for i in range(1, 301)
    )
    hub = Entry.objects.get(bank=bank, short_id=f"{0:08x}")
    with CaptureQueriesContext(connection) as ctx:
        result = traverse(
            bank, hub, Step(("cites",)), Limits(max_depth=2, max_expansions=50, max_paths=100)
        )
    assert result.edges_read == 51 and result.expansions == 50
    body = result.as_json()
    assert body["counts"]["read"] == 51 and body["counts"]["nodes"] == 51
    assert body["limits_hit"] == ["max_expansions"] and body["frontier"] == [hub.short_id]
    hops = [
        q["sql"] for q in ctx.captured_queries if 'FROM "graph_edge"' in q["sql"].split("WHERE")[0]
    ]
    assert hops and hops[0].rstrip().endswith("LIMIT 51")
    assert "ORDER BY" not in hops[0]  # nothing forces PostgreSQL to read the whole hub


def test_max_depth_in_relations_mode_is_a_ceiling(bank, g):
    g.link("A", "B", "precedes")
    g.link("B", "C", "precedes")
    g.link("C", "D", "precedes")
    two = traverse(bank, g["A"], Step(("precedes",)), Limits(max_depth=2))
    assert two.truncated is True and two.limits_hit == ["max_depth"]
    assert [two.nodes[pk].title for pk in two.frontier] == ["C"]
    assert g.path_titles(two) == [["A", "B", "C"]]
    three = traverse(bank, g["A"], Step(("precedes",)), Limits(max_depth=3))
    assert three.truncated is False and g.path_titles(three) == [["A", "B", "C", "D"]]
    # With steps, running out of steps is the plan, not a cut; a lower max_depth is a cut.
    planned = traverse(bank, g["A"], [Step(("precedes",))] * 2)
    assert planned.truncated is False
    capped = traverse(bank, g["A"], [Step(("precedes",))] * 3, Limits(max_depth=1))
    assert capped.limits_hit == ["max_depth"] and g.path_titles(capped) == [["A", "B"]]


def test_max_evidence_tokens_withholds_the_rest(bank, g):
    for i in range(4):
        g.link("S", f"T{i}", note="Forty characters of explanation, exactly")  # 10 tokens
    result = traverse(bank, g["S"], [Step(("see_also",))], Limits(max_evidence_tokens=25))
    body = result.as_json()
    notes = [body["edges"][str(p["edges"][0])]["note"] for p in body["paths"]]
    assert notes[:2] == ["Forty characters of explanation, exactly"] * 2
    assert notes[2:] == [None, None]
    assert body["counts"]["evidence_tokens"] == 20
    assert body["truncated"] is True and body["limits_hit"] == ["max_evidence_tokens"]


def test_filters_are_in_the_hop_not_after(bank, g):
    """Edges of another time never spend the budget: 5 expired edges, budget 1, no cut."""
    for i in range(5):
        g.link("S", f"Old {i}", valid_to="2020-01-01")
    g.link("S", "Now")
    result = traverse(bank, g["S"], [Step(("see_also",))], Limits(max_expansions=1))
    assert result.truncated is False and result.edges_read == 1
    assert g.path_titles(result) == [["S", "Now"]]


def test_tenancy_other_banks_edges_are_never_read(bank, other_bank, g):
    g.link("S", "Mine")
    theirs = Graph(other_bank)
    theirs.link("S", "Theirs")
    result = traverse(bank, g["S"], [Step(("see_also",))])
    assert g.path_titles(result) == [["S", "Mine"]]
    with pytest.raises(Exception) as info:
        traverse(bank, theirs["S"], [Step(("see_also",))])
    assert getattr(info.value, "code", None) == "entry_not_found"


def test_unknown_relation_is_refused(bank, g):
    g.add("S")
    with pytest.raises(InvalidInput) as info:
        traverse(bank, g["S"], [Step(("depends_on",))])
    assert info.value.code == "invalid_value"  # an unknown filter value (issue 22)
    assert "depends_on" in info.value.message and "see_also" in info.value.message


# --- parameterised questions ---------------------------------------------------------------------


def test_dependents_of(bank, settlement):
    g = settlement
    g.link("Reports UI", "Reports", "depends_on")
    one = dependents_of(bank, g["Settlement connector"], 1)
    assert {t[-1] for t in g.path_titles(one)} == {"Reports", "Nightly ETL", "Dashboard API"}
    assert one.limits_hit == ["max_depth"]  # Reports UI is one hop further
    two = dependents_of(bank, g["Settlement connector"], 2)
    assert two.truncated is False
    assert ["Settlement connector", "Reports", "Reports UI"] in g.path_titles(two)


def test_dependents_of_needs_the_relation(bank, g):
    g.add("S")
    with pytest.raises(InvalidInput) as info:
        dependents_of(bank, g["S"], 2)
    assert info.value.code == "unknown_relation"


def test_owners_of(bank, settlement):
    g = settlement
    result = owners_of(bank, g["Nightly ETL"])
    assert g.path_titles(result) == [["Nightly ETL", "Platform"]]


def test_approvals_required_for_follows_the_documented_rule(bank, settlement):
    g = settlement
    define(bank, "requires_approval_from")
    g.add("CFO", kind="person")
    g.link("Reports", "CFO", "requires_approval_from")
    g.link("Reports", "Runbook", "requires")  # not a role: not an approver
    answer = approvals_required_for(bank, g["Reports"])
    body = answer.as_json()
    approvers = {a["title"] for a in body["approvers"]}
    assert approvers == {"CFO", "Service owner", "Risk approver"}
    assert body["truncated"] is False and len(body["searched"]) == 3
    cfo = next(a for a in body["approvers"] if a["title"] == "CFO")
    assert body["paths"][cfo["paths"][0]]["nodes"] == [g["Reports"].short_id, g["CFO"].short_id]
    risk = next(a for a in body["approvers"] if a["title"] == "Risk approver")
    via = body["paths"][risk["paths"][0]]["nodes"]
    assert [body["nodes"][sid]["title"] for sid in via] == [
        "Reports",
        "Analytics",
        "Policy A",
        "Risk approver",
    ]


def test_the_collector_is_paused_only_for_the_walk(bank, g, monkeypatch):
    """The cyclic collector is off while the walk runs, on again after it (an error
    included), and left off when the caller had switched it off."""
    g.link("A", "B")
    seen = []
    original = walk._walk

    def spy(*args):
        seen.append(gc.isenabled())
        return original(*args)

    monkeypatch.setattr(walk, "_walk", spy)
    traverse(bank, g["A"], Step(("see_also",)))
    assert seen == [False] and gc.isenabled()
    with pytest.raises(InvalidInput):
        traverse(bank, g["A"], Step(("no_such_relation",)))
    monkeypatch.setattr(walk, "_walk", lambda *args: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        traverse(bank, g["A"], Step(("see_also",)))
    assert gc.isenabled()
    gc.disable()
    try:
        with walk.collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
