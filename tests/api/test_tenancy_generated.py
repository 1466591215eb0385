"""Tenancy, generated from the URL configuration: every API route, every method, called with
a token of another bank and REAL ids of the foreign bank's rows, answers exactly what it
answers for a bank that does not exist (404 ``bank_not_found``). A route added later is
covered without editing this file; one that forgets the bank check fails here.

Ids for path parameters come from ``foreign_ids``. A parameter it does not know gets a
foreign entry's id and is reported, so a new kind of id can be given a real row.
"""

from __future__ import annotations

import pytest

from graph.services.curation import merge_entries
from graph.services.edges import link
from kb.models import Bank, Job
from tests.api.routes import api_routes

pytestmark = pytest.mark.django_db

UNKNOWN_BANK = "no-such-bank"
ROUTES = [r for r in api_routes() if r.params]


@pytest.fixture
def foreign_ids(other_bank, make_entry, hashing_embedder) -> dict:
    """Real rows of ``other_bank`` (the bank the caller's token does not hold)."""
    a = make_entry("Foreign A", in_bank=other_bank)
    b = make_entry("Foreign B", in_bank=other_bank)
    c = make_entry("Foreign C", in_bank=other_bank)
    process = make_entry("Foreign process", in_bank=other_bank, kind="process")
    edge = link(other_bank, {"from": a.short_id, "to": b.short_id, "relation": "cites"})
    merge = merge_entries(other_bank, a.short_id, c.short_id, "duplicates")
    job = Job.objects.create(bank=other_bank, kind="import")
    return {
        "bank": other_bank.slug,
        "entry_id": b.short_id,
        "edge_id": edge.pk,
        "op_id": merge.operation.pk,
        "process_id": process.short_id,
        "job_id": job.public_id,
    }


def _fill(route, ids: dict, bank: str) -> str:
    values = {}
    for name in route.params:
        if name == "bank":
            values[name] = bank
        elif name in ids:
            values[name] = ids[name]
        elif route.converters[name] == "int":
            values[name] = ids["edge_id"]
        else:
            values[name] = ids["entry_id"]
    return route.path(**values)


def _call(client, method: str, path: str):
    if method in ("post", "put", "patch"):
        return getattr(client, method)(path, {}, format="json")
    return getattr(client, method)(path)


def _code(response):
    if not response.content:
        return None
    try:
        return response.json().get("error", {}).get("code")
    except ValueError:
        return "<not json>"


def test_the_generated_routes_cover_the_api():
    names = {r.name for r in ROUTES}
    # A sanity floor, so an import mistake cannot make the test below vacuous.
    assert len(ROUTES) >= 30, [str(r) for r in ROUTES]
    assert {"entry-detail", "edge-unlink", "operation-revert", "job-detail"} <= names


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_a_foreign_bank_answers_like_an_unknown_bank(route, bank, token_client, foreign_ids):
    client = token_client(bank)  # every scope, for its own bank only
    for method in route.methods:
        if "bank" in route.params:
            foreign = _call(client, method, _fill(route, foreign_ids, foreign_ids["bank"]))
            unknown = _call(client, method, _fill(route, foreign_ids, UNKNOWN_BANK))
        else:
            # A route of its own (a job): the foreign row must look like one that does not exist.
            foreign = _call(client, method, _fill(route, foreign_ids, bank.slug))
            missing = {
                k: f"{v}x" if isinstance(v, str) else 999_999_999 for k, v in foreign_ids.items()
            }
            unknown = _call(client, method, _fill(route, missing, bank.slug))
        where = f"{method.upper()} {route}"
        assert unknown.status_code == 404, (
            f"{where}: an unknown bank or id gave {unknown.status_code}"
        )
        assert foreign.status_code == 404, (
            f"{where}: a foreign bank's row gave {foreign.status_code}: {foreign.content[:300]!r}"
        )
        assert _code(foreign) == _code(unknown), f"{where}: {_code(foreign)} vs {_code(unknown)}"
        if method != "head":
            assert _code(foreign) in ("bank_not_found", "job_not_found"), where


def test_every_route_with_a_bank_checks_it_for_an_unknown_bank_too(bank, token_client):
    """The unknown-bank answer itself is the envelope's 404 on every route and method."""
    client = token_client(bank)
    for route in ROUTES:
        if "bank" not in route.params:
            continue
        for method in route.methods:
            values = {name: "deadbeef" if name != "bank" else UNKNOWN_BANK for name in route.params}
            if route.converters.get("edge_id") == "int":
                values["edge_id"] = 1
            response = _call(client, method, route.path(**values))
            assert response.status_code == 404, f"{method.upper()} {route}: {response.status_code}"
            if method != "head":
                assert _code(response) == "bank_not_found", f"{method.upper()} {route}"


def test_the_foreign_bank_exists_and_the_ids_are_real(foreign_ids):
    from graph.models import Edge
    from kb.models import Entry, Operation

    other = Bank.objects.get(slug=foreign_ids["bank"])
    assert Entry.objects.filter(bank=other, short_id=foreign_ids["entry_id"]).exists()
    assert Edge.objects.filter(bank=other, pk=foreign_ids["edge_id"]).exists()
    assert Operation.objects.filter(bank=other, pk=foreign_ids["op_id"]).exists()
    assert Job.objects.filter(bank=other, public_id=foreign_ids["job_id"]).exists()
