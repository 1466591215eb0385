"""One request context for HTTP and MCP (issue 23): a tool call and a REST request that do the
same write give log lines that carry the request id and the actor, and the operation row the
write leaves carries the same request id and actor as those log lines.

The MCP leg runs the real server (``mcpserver.server.build_server``) in process with the
official SDK client, so its log records reach ``caplog``; the REST leg goes through the
middleware stack with Django's test client."""

from __future__ import annotations

import logging

import anyio
import pytest
from mcp.client import Client
from rest_framework.test import APIClient

from config.serving.logging import RequestContextFilter
from kb.models import Operation, OperationKind
from kb.services.entries import clean_entry_data, create_entry
from mcpserver.server import build_server

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

REQUEST_LOG = "config.serving.request"


@pytest.fixture
def records(caplog):
    """Log records as the handlers see them: with the request context filled in."""
    caplog.set_level(logging.INFO)
    context_filter = RequestContextFilter()
    caplog.handler.addFilter(context_filter)
    yield caplog
    caplog.handler.removeFilter(context_filter)


def _entry(bank):
    data = clean_entry_data(
        bank,
        {
            "title": "Deploy needs the VPN",
            "content": "Run vpn up first.",
            "lifetime": {"durable": True},
        },
    )
    return create_entry(bank, data, actor="staff:seed")


def _request_line(caplog, starts: str) -> logging.LogRecord:
    lines = [
        r for r in caplog.records if r.name == REQUEST_LOG and r.getMessage().startswith(starts)
    ]
    assert len(lines) == 1, [r.getMessage() for r in caplog.records if r.name == REQUEST_LOG]
    return lines[0]


def _check_one_context(caplog, line: logging.LogRecord, actor: str) -> None:
    """The request line names the request id and actor; every product log line of the request
    does too; the verify operation carries both."""
    assert line.request_id and line.actor == actor
    ours = [r for r in caplog.records if getattr(r, "request_id", None) == line.request_id]
    assert line in ours
    product = [r for r in caplog.records if r.name.split(".")[0] in ("config", "kb", "graph")]
    for record in product:
        assert record.request_id == line.request_id, record.getMessage()
        assert record.actor == actor, record.getMessage()
    op = Operation.objects.filter(kind=OperationKind.VERIFY).latest("pk")
    assert (op.request_id, op.actor) == (line.request_id, line.actor)
    assert op.pk in line.operations


def test_an_mcp_write_carries_its_request_id_and_actor_to_logs_and_operation(mcp_world, records):
    entry = _entry(mcp_world["bank"])
    token = mcp_world["writer"]
    records.clear()

    async def call():
        async with Client(build_server(lambda ctx: token)) as client:
            return await client.call_tool("verify_entry", {"id": entry.short_id, "note": "ran it"})

    result = anyio.run(call)

    assert not result.is_error, result.content[0].text
    line = _request_line(records, "MCP verify_entry 200")
    assert line.method == "MCP" and line.route == "mcp:verify_entry"
    _check_one_context(records, line, "agent:mcp-agent")


def test_a_rest_write_carries_the_same_fields(mcp_world, records):
    entry = _entry(mcp_world["bank"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {mcp_world['writer']}")
    records.clear()

    response = client.post(
        f"/api/v1/banks/acme/entries/{entry.short_id}/verify", {"note": "ran it"}, format="json"
    )

    assert response.status_code == 200, response.content
    line = _request_line(records, "POST /api/v1/banks/acme/entries/")
    assert response["X-Request-ID"] == line.request_id
    _check_one_context(records, line, "agent:mcp-agent")


def test_the_two_interfaces_leave_the_same_operation_but_their_own_request_ids(mcp_world, records):
    entry = _entry(mcp_world["bank"])
    token = mcp_world["writer"]

    async def call():
        async with Client(build_server(lambda ctx: token)) as client:
            return await client.call_tool("verify_entry", {"id": entry.short_id, "note": "ran it"})

    anyio.run(call)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    client.post(
        f"/api/v1/banks/acme/entries/{entry.short_id}/verify", {"note": "ran it"}, format="json"
    )

    mcp_op, rest_op = Operation.objects.filter(kind=OperationKind.VERIFY).order_by("pk")
    fields = ("kind", "actor", "reason", "details")
    assert [getattr(mcp_op, f) for f in fields] == [getattr(rest_op, f) for f in fields]
    assert mcp_op.request_id and rest_op.request_id and mcp_op.request_id != rest_op.request_id
