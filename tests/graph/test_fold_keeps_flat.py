"""The fold loses nothing of the flat answer (issue 21): every entry of the flat top ``limit``
is a result of the folded answer or a pointer under one, whatever the graph among the pool.
A property over random pools and edges (hypothesis), and the case that broke it."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graph.retrieval.fold import PROTECTED, PoolEdge, fold_pool

# (relation, fold role, neighbour priority) as the core edge types have them
RELATIONS = [
    ("corrects", "dominates", 100),
    ("supersedes", "dominates", 90),
    ("clarifies", "dominates", 60),
    ("part_of", "parent", 50),
    ("split_from", "parent", 50),
    ("derived_from", "parent", 40),
    ("see_also", "", 10),
    ("requires", "", 20),
]


@st.composite
def pools(draw):
    size = draw(st.integers(1, 20))
    ranked = draw(st.permutations(range(100, 100 + size)))
    pairs = st.tuples(st.sampled_from(ranked), st.sampled_from(ranked), st.sampled_from(RELATIONS))
    edges = [
        PoolEdge(i, a, b, rel, role, priority, draw(st.sampled_from(["", "why"])))
        for i, (a, b, (rel, role, priority)) in enumerate(draw(st.lists(pairs, max_size=30)))
    ]
    return list(ranked), edges, draw(st.integers(1, 10))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pools())
def test_every_flat_entry_is_a_result_or_a_pointer(case):
    ranked, edges, limit = case
    plan = fold_pool(ranked, edges, limit)
    shown = {r.entry_id for r in plan.results}
    shown |= {f.entry_id for r in plan.results for f in r.related}
    assert set(ranked[:limit]) <= shown
    # ...and the answer holds more than ``limit`` results only for correctors standing beside
    # a protected result.
    standing = {
        e.source
        for e in edges
        if e.relation == "corrects" and e.target in ranked[:PROTECTED] and e.source != e.target
    }
    extra = [r.entry_id for r in plan.results[limit:]]
    assert len(extra) <= len(standing & shown)
    assert len(shown) == len(set(shown))  # no entry twice
    ids = [r.entry_id for r in plan.results] + [f.entry_id for r in plan.results for f in r.related]
    assert len(ids) == len(set(ids))


def test_a_standing_corrector_from_beyond_the_top_does_not_push_the_last_group_out():
    # 1 and 2 protected; 9 (beyond the top 3) corrects 2 and stands beside it; 3 is alone.
    edges = [PoolEdge(1, 9, 2, "corrects", "dominates", 100, "fixes the port")]
    plan = fold_pool([1, 2, 3, 4, 5, 6, 7, 8, 9], edges, limit=3)
    assert [r.entry_id for r in plan.results] == [1, 2, 9, 3]
