"""A read-only token against EVERY write endpoint, generated from the URL configuration:
each POST, PUT, PATCH and DELETE of every bank route answers 403 ``missing_scope`` and writes
nothing. POSTs that only read (the query, a traversal, ...) are listed in ``READ_POSTS`` and
must answer the read-only token without a 403; a new route is a write until listed there.
"""

from __future__ import annotations

import pytest

from graph.models import Edge
from graph.services.edges import link
from kb.models import Entry, Job, Operation
from tests.api.routes import WRITE_METHODS, api_routes

pytestmark = pytest.mark.django_db

# (route, method) pairs that read with the read scope although their method is POST.
READ_POSTS = {
    ("api/v1/banks/<slug:bank>/query", "post"),
    ("api/v1/banks/<slug:bank>/recall/anchors", "post"),
    ("api/v1/banks/<slug:bank>/traverse", "post"),
    ("api/v1/banks/<slug:bank>/search/ppr", "post"),
    ("api/v1/banks/<slug:bank>/search/facts", "post"),
    ("api/v1/banks/<slug:bank>/context", "post"),
}
BANK_ROUTES = [r for r in api_routes() if "bank" in r.params]
WRITES = [
    (route, method)
    for route in BANK_ROUTES
    for method in route.methods
    if method in WRITE_METHODS and (route.route, method) not in READ_POSTS
]


@pytest.fixture
def own_ids(bank, make_entry, hashing_embedder) -> dict:
    a, b = make_entry("Own A"), make_entry("Own B")
    process = make_entry("Own process", kind="process")
    edge = link(bank, {"from": a.short_id, "to": b.short_id, "relation": "cites"})
    op = Operation.objects.filter(bank=bank).order_by("-pk").first()
    return {
        "bank": bank.slug,
        "entry_id": b.short_id,
        "edge_id": edge.pk,
        "op_id": op.pk if op else 1,
        "process_id": process.short_id,
        "job_id": Job.objects.create(bank=bank, kind="import").public_id,
    }


def _state(bank):
    return (
        list(Entry.objects.filter(bank=bank).order_by("pk").values()),
        list(Edge.objects.filter(bank=bank).order_by("pk").values()),
        Operation.objects.filter(bank=bank).count(),
    )


def test_there_are_write_endpoints_to_check():
    assert len(WRITES) >= 15, [f"{m} {r}" for r, m in WRITES]


@pytest.mark.parametrize(("route", "method"), WRITES, ids=lambda v: str(v))
def test_a_read_only_token_is_refused_on_every_write(route, method, bank, token_client, own_ids):
    reader = token_client(bank, scopes="read")
    values = {
        name: own_ids.get(
            name, own_ids["edge_id"] if route.converters[name] == "int" else own_ids["entry_id"]
        )
        for name in route.params
    }
    before = _state(bank)
    path = route.path(**values)
    response = (
        getattr(reader, method)(path, {}, format="json")
        if method != "delete"
        else reader.delete(path + "?reason=test")
    )
    assert response.status_code == 403, (
        f"{method.upper()} {route} with a read-only token gave {response.status_code}: "
        f"{response.content[:300]!r} (a POST that only reads belongs in READ_POSTS)"
    )
    assert response.json()["error"]["code"] == "missing_scope"
    assert _state(bank) == before, f"{method.upper()} {route} wrote with a read-only token"


# Only the read POSTs this build routes (other branches add some of them).
PRESENT_READ_POSTS = [r for r in BANK_ROUTES if (r.route, "post") in READ_POSTS]


@pytest.mark.parametrize("route", PRESENT_READ_POSTS, ids=str)
def test_read_posts_answer_a_read_only_token(route, bank, token_client, own_ids):
    reader = token_client(bank, scopes="read")
    response = reader.post(route.path(bank=bank.slug), {}, format="json")
    assert response.status_code != 403, response.content
