"""The query as one action (issue 23): one declaration validates the request and generates the
MCP tool schema; REST and the MCP tool run the same action and answer the same JSON."""

from __future__ import annotations

import pytest

from graph.actions.query import QueryAction
from graph.retrieval.query import QueryParams
from graph.retrieval.query_input import QueryRequestSerializer
from kb.actions.base import Caller
from kb.models import Entry
from kb.services.embedding import embed_entries
from kb.services.tokens import create_token
from mcpserver import dispatch
from mcpserver.tools import input_schema, tool_specs

pytestmark = pytest.mark.django_db


def _query_tool():
    return next(s for s in tool_specs() if s.name == "query_knowledge_bank")


def _call(bank, args, raw):
    """The tool call after transport (``call_tool`` also recycles the thread's connection,
    which a test transaction cannot allow)."""
    return dispatch.call_action(_query_tool(), bank.slug, args, raw)


def test_tool_schema_is_generated_from_the_declaration():
    schema = input_schema(_query_tool())
    declared = set(QueryRequestSerializer().fields)
    assert set(schema["properties"]) == declared | {"bank"}
    for name in ("budget_tokens", "compact", "expand"):
        assert name in schema["properties"]
    for name in ("limit", "fold", "pool", "neighbors", "budget_tokens", "expand"):
        assert schema["properties"][name]["description"], name
    assert schema["properties"]["limit"]["maximum"] == 100
    assert schema["properties"]["budget_tokens"]["minimum"] == 200
    assert schema["required"] == ["query"]


@pytest.fixture
def answered_bank(bank, make_entry, hashing_embedder):
    for i in range(4):
        make_entry(f"Deploy rollout canary step {i}")
    embed_entries(Entry.objects.filter(bank=bank), embedder=hashing_embedder)
    return bank


def test_mcp_tool_and_rest_run_the_same_action(answered_bank, token_client):
    _, raw = create_token("reader", [answered_bank], "read")
    args = {"query": "deploy rollout canary", "limit": 3, "budget_tokens": 900}
    tool = _call(answered_bank, args, raw)
    assert tool.status == 200, tool.data
    rest = token_client(answered_bank, scopes="read").post(
        f"/api/v1/banks/{answered_bank.slug}/query", args, format="json"
    )
    assert rest.status_code == 200
    strip = lambda body: [(r["id"], r["rank"], r["confidence"]) for r in body["results"]]  # noqa: E731
    assert strip(tool.data) == strip(rest.json())
    assert tool.data["stats"]["budget_tokens"] == 900


@pytest.mark.parametrize(
    ("args", "status", "code"),
    [
        ({"query": "  "}, 400, "invalid_input"),
        ({"query": "x", "limit": "3"}, 400, "invalid_input"),
        ({"query": "x", "surprise": 1}, 400, "invalid_input"),
        ({"query": "x", "budget_tokens": 10}, 400, "invalid_input"),
    ],
)
def test_mcp_tool_refuses_bad_input_as_rest_does(answered_bank, args, status, code):
    _, raw = create_token("reader", [answered_bank], "read")
    answer = _call(answered_bank, args, raw)
    assert (answer.status, answer.error_code) == (status, code)


def test_mcp_tool_keeps_tenancy_and_scope(answered_bank, other_bank):
    _, stranger = create_token("stranger", [other_bank], "read")
    answer = _call(answered_bank, {"query": "x", "bank": answered_bank.slug}, stranger)
    assert (answer.status, answer.error_code) == (404, "bank_not_found")
    _, writer_only = create_token("writer", [answered_bank], "write")
    answer = _call(answered_bank, {"query": "x"}, writer_only)
    assert (answer.status, answer.error_code) == (403, "missing_scope")
    assert _call(answered_bank, {"query": "x"}, "kb_nope_nope").status == 401


def test_action_returns_typed_data_and_counts_nothing(answered_bank):
    before = sorted(Entry.objects.filter(bank=answered_bank).values_list("usage_count", flat=True))
    caller = Caller.system(via="command")
    params = QueryParams(query="deploy rollout canary")
    answer = QueryAction.for_params(answered_bank, params, caller).execute()
    assert answer.results and all(r.rank == i for i, r in enumerate(answer.results, 1))
    after = sorted(Entry.objects.filter(bank=answered_bank).values_list("usage_count", flat=True))
    assert before == after  # usage is counted when the rendered answer is handed out
