"""Per-token rate limits hold for MCP tool calls: the same settings and the same count as REST.

A tool call runs the REST view in process (``mcpserver.dispatch``), so the view's throttle
(``KB_RATE_LIMIT_PER_MINUTE``) and the write limit checked with the scope
(``KB_RATE_LIMIT_WRITES_PER_MINUTE``) count it in the token's window in PostgreSQL, next to
the token's REST requests. Checked on a live uvicorn server with the official SDK client.
"""

from __future__ import annotations

import time

import anyio
import httpx2
import pytest

from kb.models import Claim, TokenRateWindow
from tests.mcp.scenario import server_env, start_uvicorn
from tests.mcp.test_http import connect, free_port, wait_for_port

pytestmark = [
    pytest.mark.xdist_group("mcp_servers"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

ALL_PER_MINUTE = 5
WRITES_PER_MINUTE = 1


@pytest.fixture
def limited_server(mcp_world):
    env = {
        **server_env(),
        "KB_RATE_LIMIT_PER_MINUTE": str(ALL_PER_MINUTE),
        "KB_RATE_LIMIT_WRITES_PER_MINUTE": str(WRITES_PER_MINUTE),
    }
    port = free_port()
    process = start_uvicorn(port, env)
    try:
        wait_for_port(process, port)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except Exception:  # noqa: BLE001
            process.kill()


def test_mcp_tool_calls_count_against_the_tokens_limits_with_rest(limited_server, mcp_world):
    # The whole exchange must fall in one one-minute window: start early in a window.
    if time.time() % 60 > 35:
        time.sleep(60 - time.time() % 60 + 0.5)
    token = mcp_world["writer"]
    headers = {"Authorization": f"Bearer {token}"}

    async def exchange():
        answers = {}
        async with httpx2.AsyncClient(headers=headers) as rest:
            answers["rest_first"] = await rest.get(f"{limited_server}/api/v1/banks/acme/claims")
            http, client = connect(limited_server, token)
            async with http, client:
                answers["read_1"] = await client.call_tool("resolve", {"q": "anything"})
                answers["write_1"] = await client.call_tool(
                    "claim_work", {"subject": "web/login.ts", "holder": "agent-1"}
                )
                answers["write_2"] = await client.call_tool(
                    "claim_work", {"subject": "web/other.ts", "holder": "agent-1"}
                )
                answers["read_2"] = await client.call_tool("resolve", {"q": "anything"})
                answers["read_3"] = await client.call_tool("resolve", {"q": "anything"})
            answers["rest_last"] = await rest.get(f"{limited_server}/api/v1/banks/acme/claims")
        return answers

    answers = anyio.run(exchange)
    assert answers["rest_first"].status_code == 200
    # Requests 2 and 3 of the window; the first write of the window.
    assert not answers["read_1"].is_error, answers["read_1"].content
    assert not answers["write_1"].is_error, answers["write_1"].content
    # The second write passes the write limit (1 a minute): refused, nothing written.
    refused_write = answers["write_2"]
    assert refused_write.is_error
    assert refused_write.content[0].text.startswith("rate_limited:")
    assert refused_write.structured_content["error"]["retry_after"] >= 1
    # Request 5 is the last the token may send this minute; the sixth is refused.
    assert not answers["read_2"].is_error, answers["read_2"].content
    refused_read = answers["read_3"]
    assert refused_read.is_error and refused_read.content[0].text.startswith("rate_limited:")
    # REST and MCP share one count: the token's next REST request is refused as well.
    last = answers["rest_last"]
    assert last.status_code == 429 and last.json()["error"]["code"] == "rate_limited"
    assert int(last.headers["Retry-After"]) >= 1
    token_id = mcp_world["writer_id"]
    counted = dict(TokenRateWindow.objects.filter(token_id=token_id).values_list("bucket", "count"))
    assert counted == {"all": 7, "write": 2}
    assert list(Claim.objects.values_list("subject", flat=True)) == ["web/login.ts"]
