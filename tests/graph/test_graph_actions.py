"""The graph and workflow use cases as actions (issue 23): one declaration per use case is
the MCP tool's schema, every interface runs the same action, and the declaration keeps the
error codes the services name."""

from __future__ import annotations

import pytest

from graph.actions.edges import LinkEntries, UnlinkEdge
from graph.actions.lookup import ResolveName
from graph.models import Edge, EdgeSource
from kb.actions.base import Caller
from kb.actions.staff import execute_as
from kb.errors import InvalidInput
from kb.models import Operation
from kb.services.tokens import create_token
from mcpserver import dispatch
from mcpserver.tools import input_schema, tool_specs

pytestmark = pytest.mark.django_db

ACTION_TOOLS = {
    "link_entries",
    "unlink_entries",
    "query_knowledge_bank",
    "resolve",
    "traverse",
    "get_context",
    "list_edge_proposals",
    "decide_edge_proposal",
    "workflow_gaps",
}


def _spec(name: str):
    return next(s for s in tool_specs() if s.name == name)


def test_converted_tools_are_generated_from_their_actions():
    for name in ACTION_TOOLS:
        spec = _spec(name)
        assert spec.action is not None, name
        declared = set(spec.action.path_ids)
        for declaration in (spec.action.Query, spec.action.Input):
            if declaration is not None:
                declared |= set(declaration().fields)
        extra = {"bank", "full"} if spec.compact else {"bank"}
        assert set(input_schema(spec)["properties"]) == declared | extra, name
    # The bank's own relations, from the declaration's x-vocabulary mark (one bank: an enum).
    link = input_schema(_spec("link_entries"), {"acme": {"relation": ["cites", "corrects"]}})
    assert link["properties"]["relation"]["enum"] == ["cites", "corrects"]
    assert link["properties"]["relation"]["description"]  # the declaration's, kept
    assert set(link["required"]) == {"from", "to", "relation"}
    unlink = input_schema(_spec("unlink_entries"))
    assert unlink["required"] == ["edge_id", "reason"]
    assert unlink["properties"]["edge_id"]["type"] == "integer"
    decide = input_schema(_spec("decide_edge_proposal"))
    decision = decide["properties"]["decision"]
    # An enum component, inlined as OpenAPI renders it (allOf of the one choice set).
    assert decision.get("enum", decision.get("allOf", [{}])[0].get("enum")) == ["accept", "reject"]


def test_a_declared_reason_keeps_the_services_code(bank, make_entry):
    a, b = make_entry("A"), make_entry("B")
    caller = Caller.system(via="command")
    edge = LinkEntries.prepare(
        caller, bank, body={"from": a.short_id, "to": b.short_id, "relation": "cites"}
    ).run()
    for body in ({}, {"reason": "   "}):
        with pytest.raises(InvalidInput) as refused:
            UnlinkEdge.prepare(caller, bank, ids={"edge_id": edge.data["id"]}, body=body)
        assert refused.value.code == "reason_required"
    assert Edge.objects.get(pk=edge.data["id"]).invalidated_at is None


def test_mcp_and_rest_unlink_write_the_same_operation(bank, make_entry, token_client):
    a, b, c = make_entry("A"), make_entry("B"), make_entry("C")
    caller = Caller.system(via="command")
    first, second = (
        LinkEntries.prepare(
            caller, bank, body={"from": a.short_id, "to": end.short_id, "relation": "cites"}
        )
        .run()
        .data["id"]
        for end in (b, c)
    )
    token, raw = create_token("agent", [bank], "read,write")
    tool = dispatch.call_action(
        _spec("unlink_entries"), bank.slug, {"edge_id": first, "reason": "wrong"}, raw
    )
    assert tool.status == 200, tool.data
    rest = token_client(bank).post(
        f"/api/v1/banks/{bank.slug}/edges/{second}/unlink", {"reason": "wrong"}, format="json"
    )
    assert rest.status_code == 200
    ops = Operation.objects.filter(kind="unlink").order_by("pk")
    assert [(op.reason, op.details["edges"]) for op in ops] == [
        ("wrong", [first]),
        ("wrong", [second]),
    ]
    assert ops[0].actor == token.actor
    assert tool.data["invalidated_at"] and rest.json()["invalidated_at"]


def test_staff_pages_run_actions_as_the_staff_member(bank, make_entry, django_user_model):
    user = django_user_model.objects.create_user("curator", is_staff=True)
    a, b = make_entry("A"), make_entry("B")
    caller = Caller.for_staff(user, via="admin")
    edge = execute_as(
        caller,
        LinkEntries,
        bank,
        body={"from": a.short_id, "to": b.short_id, "relation": "cites", "reason": "admin link"},
    )
    assert edge.source == EdgeSource.STAFF
    assert Operation.objects.get(kind="link").actor == "staff:curator"
    with pytest.raises(InvalidInput):  # a refused declaration is a KbError the page shows
        execute_as(caller, LinkEntries, bank, body={"from": a.short_id, "relation": 5})


def test_resolve_over_mcp_answers_as_rest(bank, make_entry, token_client):
    entry = make_entry("Reports service")
    _, raw = create_token("agent", [bank], "read")
    tool = dispatch.call_action(_spec("resolve"), bank.slug, {"q": "Reports service"}, raw)
    rest = token_client(bank, scopes="read").get(
        f"/api/v1/banks/{bank.slug}/resolve", {"q": "Reports service"}
    )
    assert tool.status == rest.status_code == 200
    assert tool.data == rest.json()
    assert tool.data["entry"]["id"] == entry.short_id
    blank = dispatch.call_action(_spec("resolve"), bank.slug, {"q": "  "}, raw)
    assert (blank.status, blank.error_code) == (400, "invalid_input")
    nul = dispatch.call_action(_spec("resolve"), bank.slug, {"q": "a\x00b"}, raw)
    assert (nul.status, nul.error_code) == (400, "invalid_string")
    assert ResolveName.scope == "read"
