"""The fold: every rule of API.md step 4–7 on hand-built inputs, then end to end."""

import pytest

from graph.retrieval.fold import PoolEdge, fold_pool

_ids = iter(range(1, 10_000))


def E(source, target, relation="see_also", fold_role="", priority=10, note=""):
    return PoolEdge(next(_ids), source, target, relation, fold_role, priority, note)


def dominates(source, target, relation="corrects"):
    return E(source, target, relation, "dominates", 100)


def parent(child, parent_id, relation="part_of"):
    return E(child, parent_id, relation, "parent", 50)


def result_ids(plan):
    return [r.entry_id for r in plan.results]


def related(plan, entry_id):
    return {f.entry_id: f for f in next(r for r in plan.results if r.entry_id == entry_id).related}


def test_no_edges_is_flat():
    plan = fold_pool([1, 2, 3, 4], [], limit=3)
    assert (
        result_ids(plan) == [1, 2, 3]
        and plan.folded == 0
        and plan.groups == 4
        and plan.refilled == 0
    )


def test_top_two_are_protected_even_when_connected_and_dominated():
    # 2 is corrected by 1 and 1 is part of 2: both still stand as themselves.
    plan = fold_pool([1, 2, 3], [dominates(1, 2), parent(1, 2, "part_of")], limit=3)
    assert result_ids(plan)[:2] == [1, 2]


def test_members_of_a_protected_group_fold_into_best_protected():
    plan = fold_pool([1, 2, 3, 4, 5], [E(3, 2), E(4, 1), E(2, 1)], limit=5)
    assert result_ids(plan) == [1, 2, 5]
    assert set(related(plan, 1)) == {3, 4}
    assert related(plan, 2) == {}


@pytest.mark.parametrize("relation", ["supersedes", "corrects", "clarifies"])
def test_dominated_entry_yields_to_its_dominator(relation):
    # pool ranks: 1, 2 protected; 3 is dominated by 5 → 5 represents the group at 3's rank.
    plan = fold_pool([1, 2, 3, 4, 5], [dominates(5, 3, relation)], limit=4)
    assert result_ids(plan) == [1, 2, 5, 4]
    folded = related(plan, 5)[3]
    assert (folded.relation, folded.direction, folded.via) == (relation, "out", None)


@pytest.mark.parametrize("relation", ["part_of", "split_from", "derived_from"])
def test_child_yields_to_parent(relation):
    plan = fold_pool([1, 2, 3, 4, 5], [parent(3, 5, relation)], limit=4)
    assert result_ids(plan) == [1, 2, 5, 4]
    assert related(plan, 5)[3].direction == "in"  # 3 → 5, seen from the representative 5


def test_bank_defined_type_with_fold_role_takes_part():
    edge = PoolEdge(999, 6, 3, "overrides", "dominates", 70, "")
    plan = fold_pool([1, 2, 3, 4, 5, 6], [edge], limit=3)
    assert result_ids(plan) == [1, 2, 6]


def test_domination_cycle_falls_back_to_best_ranked():
    plan = fold_pool([1, 2, 3, 4, 5], [dominates(3, 4), dominates(4, 5), dominates(5, 3)], limit=5)
    assert result_ids(plan) == [1, 2, 3]
    assert set(related(plan, 3)) == {4, 5}


def test_via_on_a_two_edge_path():
    # 3 —clarifies→ 4 —cites→ 6: 6 is not adjacent to 3; via names 4.
    plan = fold_pool(
        [1, 2, 3, 4, 5, 6], [dominates(4, 3, "clarifies"), E(4, 6, "cites", note="n")], limit=3
    )
    rep = result_ids(plan)[2]
    assert rep == 4
    items = related(plan, 4)
    assert items[3].via is None
    assert items[6].via is None  # 6 is adjacent to 4 itself
    plan = fold_pool(
        [1, 2, 3, 4, 5, 6], [E(3, 4, "see_also"), E(4, 6, "cites", note="why")], limit=3
    )
    items = related(plan, 3)
    assert items[4].via is None
    assert items[6].via == {"id": 4, "relation": "cites", "direction": "out"}
    assert (items[6].relation, items[6].note) == ("cites", "why")


def test_refill_counts_results_from_beyond_limit():
    # 3,4,5 fold into one group: two slots are freed and refilled by 6 and 7.
    plan = fold_pool(list(range(1, 11)), [E(3, 4), E(4, 5)], limit=5)
    assert result_ids(plan) == [1, 2, 3, 6, 7]
    assert plan.refilled == 2 and plan.folded == 2


def test_nothing_from_flat_top_k_is_lost():
    import random

    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(3, 20)
        limit = rng.randint(1, n)
        pool = list(range(1, n + 1))
        edges = []
        for _ in range(rng.randint(0, 25)):
            a, b = rng.sample(pool, 2)
            kind = rng.choice(["", "dominates", "parent"])
            edges.append(E(a, b, "x", kind, rng.randint(1, 100)))
        plan = fold_pool(pool, edges, limit)
        shown = set(result_ids(plan)) | {f.entry_id for r in plan.results for f in r.related}
        assert set(pool[:limit]) <= shown
        assert len(plan.results) == min(limit, len(plan.results)) and len(
            set(result_ids(plan))
        ) == len(plan.results)
        assert len(plan.results) <= limit
        if n >= limit and not edges:
            assert len(plan.results) == limit
