"""The MCP server over streamable HTTP at /mcp, next to REST, on a live uvicorn server."""

from __future__ import annotations

import socket
import time

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.scenario import (
    Rest,
    run_read_only_session,
    run_session,
    server_env,
    start_uvicorn,
)

pytestmark = [
    pytest.mark.xdist_group("mcp_servers"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(process, port: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError("uvicorn did not start") from None
            time.sleep(0.3)


@pytest.fixture
def uvicorn_server(mcp_world):
    env = server_env()
    port = free_port()
    process = start_uvicorn(port, env)
    wait_for_port(process, port)
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    try:
        process.wait(timeout=20)
    except Exception:  # noqa: BLE001
        process.kill()


def connect(base: str, raw_token: str):
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {raw_token}"}, timeout=httpx2.Timeout(30, read=300)
    )
    return http, Client(streamable_http_client(f"{base}/mcp", http_client=http))


def test_every_tool_over_http_equals_rest(uvicorn_server, mcp_world):
    async def session():
        http, client = connect(uvicorn_server, mcp_world["writer"])
        async with http, client:
            await run_session(client, Rest(mcp_world["writer"], "acme"))
        http, client = connect(uvicorn_server, mcp_world["reader"])
        async with http, client:
            await run_read_only_session(client)

    anyio.run(session)


def test_http_without_a_valid_token_is_401_and_rest_still_served(uvicorn_server, mcp_world):
    async def probe():
        async with httpx2.AsyncClient() as http:
            initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
            missing = await http.post(f"{uvicorn_server}/mcp", json=initialize)
            wrong = await http.post(
                f"{uvicorn_server}/mcp", json=initialize, headers={"Authorization": "Bearer kb_x"}
            )
            rest = await http.get(
                f"{uvicorn_server}/api/v1/banks/acme/claims",
                headers={"Authorization": f"Bearer {mcp_world['writer']}"},
            )
            return missing, wrong, rest

    missing, wrong, rest = anyio.run(probe)
    assert missing.status_code == 401 and wrong.status_code == 401
    assert missing.json()["error"]["code"] == "not_authenticated"
    assert rest.status_code == 200 and rest.json() == {"results": []}


def test_claims_belong_to_their_token_over_mcp(uvicorn_server, mcp_world):
    """Issue 22: another token sending the same holder neither renews nor releases the claim;
    a curate token may release it, and that is audited."""
    from kb.models import Claim, Operation
    from kb.services.tokens import create_token
    from tests.mcp.scenario import fails, ok

    _, other = create_token("mcp-other-writer", [mcp_world["bank"]], "read,write")
    _, second = create_token("mcp-second-writer", [mcp_world["bank"]], "write")
    claim = {"subject": "rotate the signing keys", "holder": "agent-A"}

    async def session():
        http, owner = connect(uvicorn_server, other)
        async with http, owner:
            made = await ok(owner, "claim_work", claim)
        http, curator = connect(uvicorn_server, mcp_world["writer"])
        async with http, curator:
            http2, intruder = connect(uvicorn_server, mcp_world["reader"])
            async with http2, intruder:
                await fails(intruder, "release_claim", {"claim_id": made["id"]}, "forbidden")
            released = await ok(
                curator, "release_claim", {"claim_id": made["id"], "reason": "stale"}
            )
        return made, released

    made, released = anyio.run(session)
    assert released["released_at"]
    audit = Operation.objects.get(kind="release", details__claim=made["id"])
    assert (
        audit.actor == "agent:mcp-agent"
        and audit.details["on_behalf_of"] == "agent:mcp-other-writer"
    )
    assert Claim.objects.get(pk=made["id"]).token_id is not None

    async def renew_as_another_token():
        http, owner = connect(uvicorn_server, other)
        async with http, owner:
            again = await ok(owner, "claim_work", claim)
        http, stranger = connect(uvicorn_server, second)
        async with http, stranger:
            refused = await fails(stranger, "claim_work", claim, "forbidden: claim_not_yours")
            refused_release = await fails(
                stranger, "release_claim", {"claim_id": again["id"]}, "forbidden: claim_not_yours"
            )
        return refused, refused_release

    refused, refused_release = anyio.run(renew_as_another_token)
    assert refused.structured_content["error"]["code"] == "claim_not_yours"
    assert refused_release.structured_content["error"]["code"] == "claim_not_yours"
