"""The corrections, split and extraction-run bodies are validated by their actions'
declarations (issue 23), with the contract's codes, before anything is written; the bank's
side (edges, relations, entries) is still the services'."""

from __future__ import annotations

import pytest

from graph.edges.links import link
from graph.models import Edge
from kb.models import Entry, Job, Operation

pytestmark = pytest.mark.django_db


def url(slug: str, *parts: str) -> str:
    return "/".join([f"/api/v1/banks/{slug}", *parts])


@pytest.fixture
def pair(bank, make_entry):
    a, b = make_entry("Connector"), make_entry("Analytics")
    edge = link(bank, {"from": a.short_id, "to": b.short_id, "relation": "owned_by"})
    return a, b, edge


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"close": [0], "reason": "x"}, "invalid_input", "close"),
        ({"close": [True], "reason": "x"}, "invalid_input", "close"),
        ({"append": [{"from": 5, "to": "b", "relation": "cites"}], "reason": "x"}, "invalid_input", "append[0].from"),
        ({"append": [{"to": "b", "relation": "cites"}], "reason": "x"}, "invalid_input", "append[0].from"),
        ({"close": "EDGE", "reason": "x"}, "invalid_input", "close"),
        ({"close": [1], "reason": 5}, "reason_required", "reason"),
        ({"close": [1], "reason": "  "}, "reason_required", "reason"),
        ({"reason": "x"}, "empty_correction", None),
    ],
)  # fmt: skip
def test_corrections_body_is_refused_by_its_declaration(client_rw, pair, body, code, field):
    operations = Operation.objects.count()
    response = client_rw.post(url("acme", "corrections"), body, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == code and error["message"], error
    assert field is None or field in error["fields"], error
    assert Operation.objects.count() == operations


def test_a_correction_that_passes_the_declaration_is_written(client_rw, pair, make_entry):
    a, _, edge = pair
    platform = make_entry("Platform")
    body = {
        "close": [edge.pk],
        "append": [{"from": a.short_id, "to": platform.short_id, "relation": "owned_by"}],
        "reason": "  Transfer.  ",
    }
    response = client_rw.post(url("acme", "corrections"), body, format="json")
    assert response.status_code == 200, response.content
    (new_id,) = response.json()["appended"]
    assert Edge.objects.get(pk=new_id).to_entry_id == platform.pk
    assert Operation.objects.get(pk=response.json()["operation"]).reason == "Transfer."


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"parts": [], "reason": "x"}, "invalid_split", "parts"),
        ({"parts": [{"title": "a"}] * 21, "reason": "x"}, "invalid_split", "parts"),
        ({"parts": ["a title"], "reason": "x"}, "invalid_split", "parts[0]"),
        ({"parts": [{"title": "a"}], "edges": {"x": 0}, "reason": "x"}, "invalid_split", "edges.x"),
        ({"parts": [{"title": "a"}], "edges": {"7": -1}, "reason": "x"}, "invalid_split", "edges.7"),
        ({"parts": [{"title": "a"}], "edges": {"7": True}, "reason": "x"}, "invalid_split", "edges.7"),
        ({"parts": [{"title": "a"}], "edges": [7], "reason": "x"}, "invalid_split", "edges"),
        ({"parts": [{"title": "a"}]}, "reason_required", "reason"),
    ],
)  # fmt: skip
def test_split_body_is_refused_by_its_declaration(client_rw, pair, body, code, field):
    a, _, _ = pair
    entries = Entry.objects.count()
    response = client_rw.post(url("acme", "entries", a.short_id, "split"), body, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == code and field in error["fields"], error
    assert Entry.objects.count() == entries


def test_split_checks_the_bank_side_after_the_entry_is_found(client_rw, pair):
    a, _, edge = pair
    body = {"parts": [{"title": "One part"}], "edges": {str(edge.pk): 1}, "reason": "x"}
    unknown = client_rw.post(url("acme", "entries", "zzzz9999", "split"), body, format="json")
    assert unknown.status_code == 404  # a schema-valid body: the entry decides first
    past = client_rw.post(url("acme", "entries", a.short_id, "split"), body, format="json")
    assert past.status_code == 400 and f"edges.{edge.pk}" in past.json()["error"]["fields"]
    body["edges"] = {str(edge.pk): 0}
    moved = client_rw.post(url("acme", "entries", a.short_id, "split"), body, format="json")
    assert moved.status_code == 201, moved.content
    assert list(moved.json()["moved"]) == [str(edge.pk)]


@pytest.mark.parametrize(
    ("body", "code"),
    [({"entries": [" "]}, "invalid_input"), ({"extractor": 5}, "unknown_extractor")],
)
def test_extraction_body_is_refused_by_its_declaration(client_rw, bank, body, code):
    response = client_rw.post(url("acme", "extractions"), body, format="json")
    assert response.status_code == 400 and response.json()["error"]["code"] == code
    assert not Job.objects.exists()
