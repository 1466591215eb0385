"""The MCP server over stdio, for one token (``manage.py mcp``)."""

from __future__ import annotations

from mcp.server.stdio import stdio_server

from mcpserver.server import build_server


async def serve_stdio(raw_token: str) -> None:
    """Serve one client on stdin/stdout until stdin closes (the SDK keeps stray output of
    handlers off the wire while it serves)."""
    server = build_server(lambda ctx: raw_token)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
