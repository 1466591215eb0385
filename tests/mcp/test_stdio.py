"""The MCP server over stdio: the SDK's own client spawns ``manage.py mcp``."""

from __future__ import annotations

import subprocess

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.mcp.scenario import (
    ROOT,
    Rest,
    manage_py,
    run_read_only_session,
    run_session,
    server_env,
)

pytestmark = [
    pytest.mark.xdist_group("mcp_servers"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def stdio(raw_token: str | None, env: dict) -> StdioServerParameters:
    command, *args = manage_py()
    args = [*args, "mcp"] + (["--token", raw_token] if raw_token else [])
    return StdioServerParameters(command=command, args=args, cwd=str(ROOT), env=env)


def test_every_tool_over_stdio_equals_rest(mcp_world):
    env = server_env()

    async def session():
        async with Client(stdio(mcp_world["writer"], env)) as client:
            await run_session(client, Rest(mcp_world["writer"], "acme"))

    anyio.run(session)


def test_read_only_token_over_stdio_via_kb_token(mcp_world):
    env = {**server_env(), "KB_TOKEN": mcp_world["reader"]}

    async def session():
        async with Client(stdio(None, env)) as client:
            await run_read_only_session(client)

    anyio.run(session)


def test_unknown_token_is_refused_before_serving(mcp_world):
    done = subprocess.run(
        [*manage_py(), "mcp", "--token", "kb_nope_nope"],
        cwd=ROOT,
        env={**__import__("os").environ, **server_env()},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    assert "Unknown or revoked token" in done.stderr
    assert done.stdout == ""
