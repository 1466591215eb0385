"""The REST contract of ``POST /api/v1/banks/{bank}/traverse`` and the entity questions."""

from __future__ import annotations

import gc

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from graph.resolution.aliases import add_alias, resolve
from graph.traversal import requests, walk
from graph.traversal.walk import DEFAULT_DEPTH
from kb.models import Entry
from tests.graph.traverse_support import SIGN_OFF, Graph

pytestmark = pytest.mark.django_db


# --- the REST contract ---------------------------------------------------------------------


def url(slug: str, *parts: str) -> str:
    return "/api/v1/banks/" + "/".join([slug, *parts])


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"]["code"] == code and body["error"]["message"]
    assert isinstance(body["error"]["fields"], dict)
    return body["error"]


def test_api_traverse_shape(client_rw, bank, settlement):
    g = settlement
    body = {
        "start": g["Settlement connector"].short_id,
        "steps": [{"relations": list(s.relations), "direction": s.direction} for s in SIGN_OFF],
        "max_depth": None,
        "max_expansions": 200,
        "max_paths": 25,
        "max_evidence_tokens": 2000,
        "valid_at": None,
        "as_of": None,
    }
    response = client_rw.post(url("acme", "traverse"), body, format="json")
    assert response.status_code == 200, response.content
    data = response.json()
    assert set(data) >= {
        "start",
        "paths",
        "nodes",
        "edges",
        "truncated",
        "limits_hit",
        "frontier",
        "counts",
        "searched",
    }
    assert data["start"] == {
        "id": g["Settlement connector"].short_id,
        "title": "Settlement connector",
    }
    assert {k: data["counts"][k] for k in ("expansions", "nodes", "edges", "paths")} == {
        "expansions": 13,
        "nodes": 11,
        "edges": 13,
        "paths": 7,
    }
    node = data["nodes"][g["Analytics"].short_id]
    assert node == {"title": "Analytics", "kind": "team", "key": None}
    edge = next(iter(data["edges"].values()))
    assert set(edge) == {
        "from",
        "to",
        "relation",
        "note_in",
        "note",
        "evidence",
        "valid_from",
        "valid_to",
        "recorded_at",
    }
    assert all(isinstance(eid, int) for p in data["paths"] for eid in p["edges"])
    assert data["searched"]["bank"] == "acme" and data["searched"]["truncated"] is False


def test_api_traverse_reads_the_vocabulary_once(client_rw, bank, settlement):
    """The request is checked against the bank's relations and the walk uses the same read."""
    body = {
        "start": settlement["Settlement connector"].short_id,
        "steps": [{"relations": list(s.relations), "direction": s.direction} for s in SIGN_OFF],
    }
    with CaptureQueriesContext(connection) as ctx:
        response = client_rw.post(url("acme", "traverse"), body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["counts"]["paths"] == 7
    vocabulary = [q for q in ctx.captured_queries if '"graph_edgetype"' in q["sql"]]
    assert len(vocabulary) == 1


def test_api_traverse_pauses_the_collector_once_for_the_walk_and_its_answer(
    client_rw, bank, settlement, monkeypatch
):
    """Over REST the walk and its answer run under one pause of the cyclic collector (off
    when the walk ends and while the answer is made), on again after the request."""
    seen = []
    walk_traverse, as_json = walk.traverse, walk.TraversalResult.as_json

    def traverse_spy(*args, **kwargs):
        result = walk_traverse(*args, **kwargs)
        seen.append(("walked", gc.isenabled()))
        return result

    def as_json_spy(result):
        seen.append(("answer", gc.isenabled()))
        return as_json(result)

    monkeypatch.setattr(requests, "traverse", traverse_spy)
    monkeypatch.setattr(walk.TraversalResult, "as_json", as_json_spy)
    body = {
        "start": settlement["Settlement connector"].short_id,
        "steps": [{"relations": list(s.relations), "direction": s.direction} for s in SIGN_OFF],
    }
    response = client_rw.post(url("acme", "traverse"), body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["counts"]["paths"] == 7
    assert seen == [("walked", False), ("answer", False)] and gc.isenabled()


def test_api_start_by_key_name_alias_and_relations_mode(client_rw, bank, g):
    (svc,) = g.add("Reports service")
    svc.key = "service:reports"
    svc.save()
    add_alias(bank, svc, "rpt")
    g.link("Reports service", "Replica", "requires")
    for start in (
        svc.short_id,
        "service:reports",
        {"key": "service:reports"},
        {"name": "rpt"},
        {"id": svc.short_id},
    ):
        response = client_rw.post(
            url("acme", "traverse"),
            {"start": start, "relations": ["requires"], "direction": "out", "max_depth": 1},
            format="json",
        )
        assert response.status_code == 200, (start, response.content)
        data = response.json()
        assert data["start"]["id"] == svc.short_id
        assert [p["nodes"] for p in data["paths"]] == [[svc.short_id, g["Replica"].short_id]]
        assert data["searched"]["relations"] == ["requires"] and data["searched"]["max_depth"] == 1


def test_api_ambiguous_and_unknown_start(client_rw, bank, g):
    g.add("Billing export nightly", "Billing export weekly")
    assert resolve(bank, "billing export").status == "ambiguous"
    response = client_rw.post(
        url("acme", "traverse"),
        {"start": {"name": "billing export"}, "relations": ["cites"]},
        format="json",
    )
    error = assert_error(response, 400, "ambiguous_start")
    titles = {c["title"] for c in error["candidates"]}
    assert titles == {"Billing export nightly", "Billing export weekly"}
    for start in ("deadbeef", {"key": "nope"}, {"name": "zzqx unrelated words"}):
        response = client_rw.post(
            url("acme", "traverse"), {"start": start, "relations": ["cites"]}, format="json"
        )
        assert_error(response, 404, "entry_not_found")


@pytest.mark.parametrize(
    ("patch", "code"),
    [
        ({"colour": "blue"}, "invalid_input"),
        ({"relations": ["nonsense"]}, "invalid_value"),
        ({"relations": []}, "invalid_relations"),
        ({"relations": "cites"}, "invalid_relations"),
        ({"direction": "sideways"}, "invalid_direction"),
        ({"max_depth": -1}, "invalid_limit"),
        ({"max_depth": 11}, "invalid_limit"),
        ({"max_depth": True}, "invalid_limit"),
        ({"max_expansions": 100_001}, "invalid_limit"),
        ({"max_expansions": 0}, "invalid_limit"),
        ({"max_paths": 10_001}, "invalid_limit"),
        ({"max_paths": "7"}, "invalid_limit"),
        ({"max_evidence_tokens": -5}, "invalid_limit"),
        ({"max_expansions": 2.5}, "invalid_limit"),
        ({"as_of": "2026-04-22T10:00:00"}, "invalid_time"),
        ({"as_of": "yesterday"}, "invalid_time"),
        ({"valid_at": 20260422}, "invalid_time"),
        ({"steps": [{"relations": ["cites"]}]}, "invalid_steps"),  # steps and relations
        ({"relations": None}, "invalid_steps"),  # neither
        ({"start": 17}, "invalid_start"),
        ({"start": {"key": "a", "name": "b"}}, "invalid_start"),
        ({"start": {"title": "x"}}, "invalid_start"),
    ],
)
def test_api_bad_input_is_400(client_rw, bank, g, patch, code):
    g.link("S", "T", "cites")
    body = {"start": g["S"].short_id, "relations": ["cites"], **patch}
    response = client_rw.post(url("acme", "traverse"), body, format="json")
    assert_error(response, 400, code)


@pytest.mark.parametrize(
    "steps",
    [
        [],
        "cites",
        [{"relations": ["cites"], "direction": "up"}],
        [{"relations": ["cites"], "extra": 1}],
        [{"relations": ["nonsense"]}],
        [{"relations": ["cites"]}] * 11,
    ],
)
def test_api_bad_steps_are_400(client_rw, bank, g, steps):
    g.link("S", "T", "cites")
    response = client_rw.post(
        url("acme", "traverse"), {"start": g["S"].short_id, "steps": steps}, format="json"
    )
    assert response.status_code == 400, response.content


def test_api_tenancy_and_body(bank, other_bank, g, token_client):
    g.link("S", "T", "cites")
    theirs = token_client(other_bank)
    body = {"start": g["S"].short_id, "relations": ["cites"]}
    assert_error(theirs.post(url("acme", "traverse"), body, format="json"), 404, "bank_not_found")
    # The start of another bank is unknown in this one.
    Graph(other_bank).add("Elsewhere")
    foreign = Entry.objects.get(bank=other_bank, title="Elsewhere").short_id
    response = theirs.post(url("globex", "traverse"), body, format="json")
    assert_error(response, 404, "entry_not_found")
    response = theirs.post(url("globex", "traverse"), {**body, "start": foreign}, format="json")
    assert response.status_code == 200 and response.json()["paths"] == []
    mine = token_client(bank, scopes="read")
    assert_error(mine.post(url("acme", "traverse"), [1, 2], format="json"), 400, "invalid_body")


def test_api_dependents_owners_approvals(client_rw, bank, settlement):
    g = settlement
    connector = g["Settlement connector"].short_id
    response = client_rw.get(url("acme", "entities", connector, "dependents") + "?depth=1")
    assert response.status_code == 200, response.content
    data = response.json()
    assert {d["title"] for d in data["dependents"]} == {"Reports", "Nightly ETL", "Dashboard API"}
    assert all(d["depth"] == 1 for d in data["dependents"])
    response = client_rw.get(url("acme", "entities", g["Reports"].short_id, "owners"))
    assert [o["title"] for o in response.json()["owners"]] == ["Analytics"]
    response = client_rw.get(url("acme", "entities", g["Nightly ETL"].short_id, "approvals"))
    data = response.json()
    assert {a["title"] for a in data["approvers"]} == {
        "Service owner",
        "Change manager",
        "Risk approver",
    }
    assert "requires_approval_from" in data["rule"]
    bad = client_rw.get(url("acme", "entities", connector, "dependents") + "?depth=99")
    assert_error(bad, 400, "invalid_limit")
    bad = client_rw.get(url("acme", "entities", connector, "owners") + "?colour=1")
    assert_error(bad, 400, "invalid_input")
    assert_error(
        client_rw.get(url("acme", "entities", "deadbeef", "owners")), 404, "entry_not_found"
    )


def test_api_dependents_without_the_relation_is_400(client_rw, bank, g):
    g.add("S")
    response = client_rw.get(url("acme", "entities", g["S"].short_id, "dependents"))
    assert_error(response, 400, "unknown_relation")


def test_kinds_allow_list_limits_what_the_walk_reaches(client_rw, bank, make_entry, linked):
    svc = make_entry("Checkout service", kind="service")
    team = make_entry("Payments team", kind="team")
    note = make_entry("Checkout gotcha", kind="gotcha")
    beyond = make_entry("Payments on-call", kind="role")
    linked(svc, team, "owned_by")
    linked(svc, note, "see_also")
    linked(team, beyond, "see_also")
    body = {"start": svc.short_id, "relations": ["owned_by", "see_also"], "max_depth": 2}
    every = client_rw.post(url("acme", "traverse"), body, format="json").json()
    assert {team.short_id, note.short_id, beyond.short_id} <= set(every["nodes"])
    teams = client_rw.post(url("acme", "traverse"), {**body, "kinds": ["team"]}, format="json")
    assert teams.status_code == 200, teams.content
    data = teams.json()
    assert set(data["nodes"]) - {svc.short_id} == {team.short_id}
    assert [p["nodes"] for p in data["paths"]] == [[svc.short_id, team.short_id]]
    unknown = client_rw.post(url("acme", "traverse"), {**body, "kinds": ["nope"]}, format="json")
    assert_error(unknown, 400, "invalid_value")
    assert "nope" in unknown.json()["error"]["fields"]["kinds"]
    empty = client_rw.post(url("acme", "traverse"), {**body, "kinds": []}, format="json")
    assert_error(empty, 400, "invalid_kinds")


@pytest.mark.parametrize(
    ("patch", "code", "message", "field"),
    [
        (
            {"steps": [{"relations": ["cites"], "direction": "up"}], "relations": None},
            "invalid_direction",
            "steps[0].direction must be one of out, in, both.",
            "steps[0].direction",
        ),
        (
            {"steps": [{"relations": ["cites"]}, {"relations": []}], "relations": None},
            "invalid_relations",
            "steps[1].relations must be a non-empty list of relation names.",
            "steps[1].relations",
        ),
        (
            {"steps": [{"direction": "in"}], "relations": None},
            "invalid_relations",
            "steps[0].relations must be a non-empty list of relation names.",
            "steps[0].relations",
        ),
        (
            {"max_paths": "7"},
            "invalid_limit",
            "max_paths must be a whole number from 1 to 10,000.",
            "max_paths",
        ),
        ({"relations": [5]}, "invalid_relations", None, "relations"),
        ({"kinds": [3]}, "invalid_kinds", None, "kinds"),
        ({"start": {"id": "   "}}, "invalid_start", None, "start"),
        ({"start": None}, "invalid_start", None, "start"),
        ({"as_of": 5}, "invalid_time", "as_of must be a string.", "as_of"),
    ],
)
def test_the_declaration_refuses_with_the_contracts_codes(
    client_rw, bank, g, patch, code, message, field
):
    """The traverse body is validated by its declaration (issue 23): each refusal keeps the
    code, the message and the field path the service gave before."""
    g.link("S", "T", "cites")
    body = {"start": g["S"].short_id, "relations": ["cites"], **patch}
    error = assert_error(client_rw.post(url("acme", "traverse"), body, format="json"), 400, code)
    assert field in error["fields"], error
    if message:
        assert error["message"] == message


def test_a_missing_start_and_null_limits(client_rw, bank, g):
    g.link("S", "T", "cites")
    missing = client_rw.post(url("acme", "traverse"), {"relations": ["cites"]}, format="json")
    error = assert_error(missing, 400, "invalid_start")
    assert error["message"] == "start is required." and error["fields"] == {"start": "Required."}
    body = {"start": g["S"].short_id, "relations": [" cites", "cites"], "max_paths": None}
    response = client_rw.post(url("acme", "traverse"), body, format="json")
    assert response.status_code == 200, response.content
    searched = response.json()["searched"]
    # Null limits are their defaults; relations are stripped and deduplicated; a walk by
    # relations goes the default depth.
    assert searched["relations"] == ["cites"] and searched["limits"]["max_paths"] == 25
    assert searched["max_depth"] == DEFAULT_DEPTH
