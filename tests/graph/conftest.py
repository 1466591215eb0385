import pytest

from graph.edges.links import link
from tests.graph.traverse_support import Graph, define


@pytest.fixture
def linked(bank):
    """Link two entries by short_id: linked(a, b, "corrects", note="...")."""

    def make(a, b, relation="see_also", **fields):
        return link(bank, {"from": a.short_id, "to": b.short_id, "relation": relation, **fields})

    return make


# The hand-built graphs of the traversal tests (test_traverse, test_traverse_api).
@pytest.fixture
def g(bank):
    return Graph(bank)


@pytest.fixture
def settlement(bank, g):
    """The illustrative graph of 004_* 12.8: connector ← services → teams → policies → roles."""
    define(bank, "depends_on", "governed_by")
    g.add("Settlement connector", kind="service")
    g.add("Reports", "Nightly ETL", "Dashboard API", kind="service")
    g.add("Analytics", "Platform", kind="team")
    g.add("Policy A", "Policy B", kind="policy")
    g.add("Service owner", "Risk approver", "Change manager", kind="role")
    for service in ("Reports", "Nightly ETL", "Dashboard API"):
        g.link(service, "Settlement connector", "depends_on", note="Breaks without it.")
    g.link("Reports", "Analytics", "owned_by")
    g.link("Dashboard API", "Analytics", "owned_by")
    g.link("Nightly ETL", "Platform", "owned_by")
    g.link("Analytics", "Policy A", "governed_by")
    g.link("Platform", "Policy B", "governed_by")
    g.link("Policy A", "Service owner", "requires")
    g.link("Policy A", "Risk approver", "requires")
    g.link("Policy B", "Service owner", "requires")
    g.link("Policy B", "Change manager", "requires")
    g.link("Policy B", "Risk approver", "requires")
    return g
