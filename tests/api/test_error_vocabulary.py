"""One error vocabulary (issue 22, API.md "Changes"): one code per failure class, decided in
one place — unstorable strings, unknown filter values, malformed path ids, scope names."""

from __future__ import annotations

import pytest
from django.db import DataError

from kb.api.errors import exception_handler
from kb.inputs import INTEGER_IDS, parse_int_id


def _error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["code"] == code, error
    return error


def test_a_read_only_token_is_told_the_scope_by_its_name(bank, token_client):
    reader = token_client(bank, scopes="read")
    response = reader.post("/api/v1/banks/acme/entries", {"title": "x"}, format="json")
    error = _error(response, 403, "missing_scope")
    assert "'write'" in error["message"] and "Scope." not in error["message"]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("edges/abc/unlink", {"reason": "r"}),
        ("edges/abc/retype", {"relation": "see_also", "reason": "r"}),
        ("operations/x/revert", {"reason": "r"}),
        ("claims/abc/release", {"reason": "r"}),
        ("proposals/zz/decide", {"decision": "reject", "reason": "r"}),
        ("edge-proposals/-1/decide", {"decision": "reject", "reason": "r"}),
    ],
)
def test_a_path_id_of_the_wrong_shape_is_400_invalid_id(client_rw, path, body):
    response = client_rw.post(f"/api/v1/banks/acme/{path}", body, format="json")
    error = _error(response, 400, "invalid_id")
    assert set(error["fields"]) & set(INTEGER_IDS)


def test_an_unknown_bank_is_404_whatever_the_id_looks_like(client_rw):
    response = client_rw.post("/api/v1/banks/nope/claims/abc/release", {}, format="json")
    _error(response, 404, "bank_not_found")


def test_get_of_a_malformed_id_is_400_and_of_a_missing_one_404(client_rw):
    _error(client_rw.get("/api/v1/banks/acme/operations/x"), 400, "invalid_id")
    _error(client_rw.get("/api/v1/banks/acme/edges/0"), 400, "invalid_id")
    _error(client_rw.get("/api/v1/banks/acme/edges/99999"), 404, "edge_not_found")


@pytest.mark.parametrize("raw", ["abc", "", " ", "1.5", "-3", "0", True, None, "１２", "9" * 30])
def test_the_one_id_parser_refuses_every_wrong_shape(raw):
    with pytest.raises(Exception) as refused:
        parse_int_id(raw, "edge_id")
    assert refused.value.code == "invalid_id"


def test_the_one_id_parser_reads_positive_whole_numbers():
    assert parse_int_id("17", "edge_id") == 17 and parse_int_id(17, "claim_id") == 17


def test_unknown_kinds_in_a_query_are_400_naming_them_and_the_allowed(client_rw):
    body = {"query": "login", "kinds": ["recipe", "banana"]}
    error = _error(
        client_rw.post("/api/v1/banks/acme/query", body, format="json"), 400, "invalid_value"
    )
    assert "banana" in error["fields"]["kinds"] and "recipe" in error["fields"]["kinds"]
    assert error["unknown"] == ["banana"] and "gotcha" in error["allowed"]


def test_unknown_filter_values_in_graph_traverse_and_listings_are_invalid_value(
    client_rw, make_entry
):
    start = make_entry("Start")
    graph = client_rw.get("/api/v1/banks/acme/graph", {"kinds": "banana"})
    assert "banana" in _error(graph, 400, "invalid_value")["fields"]["kinds"]
    graph = client_rw.get("/api/v1/banks/acme/graph", {"relations": "likes"})
    assert "likes" in _error(graph, 400, "invalid_value")["fields"]["relations"]
    walk = {"start": start.short_id, "relations": ["likes"], "direction": "out", "max_depth": 1}
    traverse = client_rw.post("/api/v1/banks/acme/traverse", walk, format="json")
    assert "see_also" in _error(traverse, 400, "invalid_value")["fields"]["relations"]
    proposals = client_rw.get("/api/v1/banks/acme/proposals", {"status": "banana"})
    assert "approved" in _error(proposals, 400, "invalid_value")["fields"]["status"]
    queue = client_rw.get("/api/v1/banks/acme/edge-proposals", {"status": "banana"})
    assert "accepted" in _error(queue, 400, "invalid_value")["fields"]["status"]


def test_nul_in_a_query_parameter_is_invalid_string(client_rw):
    _error(client_rw.get("/api/v1/banks/acme/resolve", {"q": "a\x00b"}), 400, "invalid_string")


def test_a_string_the_database_refused_is_invalid_string_and_a_range_error_invalid_value():
    nul = DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes")
    assert exception_handler(nul, {}).data["error"]["code"] == "invalid_string"
    out_of_range = DataError("integer out of range")
    assert exception_handler(out_of_range, {}).data["error"]["code"] == "invalid_value"
