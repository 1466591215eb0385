import pytest

from graph.edges.links import link


@pytest.fixture
def linked(bank):
    """Link two entries by short_id: linked(a, b, "corrects", note="...")."""

    def make(a, b, relation="see_also", **fields):
        return link(bank, {"from": a.short_id, "to": b.short_id, "relation": relation, **fields})

    return make
