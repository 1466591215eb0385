"""The MCP server (API.md "MCP") on the official SDK's low-level ``Server``.

Low-level, because the tools' input schemas are built per caller from the vocabulary of the
banks its token holds (relations and kinds as enums), and because a failure must be a tool
result with ``isError`` whose text starts with the REST error code, which the decorator layer
would not let us shape. Each call is one synchronous trip through ``dispatch.call_tool`` (the
REST view, in process) run in a worker thread, since the Django ORM is synchronous.

The token comes from the transport: fixed for stdio (``manage.py mcp --token``), and the
``Authorization: Bearer`` header of each HTTP request for streamable HTTP.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from asgiref.sync import sync_to_async
from django.db.models import Q
from mcp.server import Server, ServerRequestContext
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)

from mcpserver import dispatch
from mcpserver.tools import input_schema, tool_specs

logger = logging.getLogger("kb.mcp")

SERVER_NAME = "knowledge-bank"
SERVER_VERSION = "1.0"
INSTRUCTIONS = (
    "Knowledge Bank: the team's shared memory of recipes, gotchas, decisions and processes. "
    "Start a task with get_context (or query_knowledge_bank); claim work with claim_work before "
    "starting something others might also pick up; record what you learned with "
    "report_learning, linking it to the entries it corrects or builds on."
)

TokenSource = Callable[[ServerRequestContext], str]


def bearer_from_request(ctx: ServerRequestContext) -> str:
    """The raw token of the HTTP request carrying this message ('' when there is none)."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    if headers is None:
        return ""
    value = headers.get("authorization") or ""
    parts = value.split()
    return parts[1] if len(parts) == 2 and parts[0].lower() == "bearer" else ""


def _vocabularies(raw_token: str) -> dict[str, dict[str, list[str]]]:
    """{bank slug: {"relation": [...], "kind": [...]}} for the banks the token holds, each
    with the core (bank-less) names and its own."""
    from graph.models import EdgeType
    from kb.models import EntryKind

    token, _ = dispatch.token_banks(raw_token)
    if token is None:
        return {}
    banks = dict(token.banks.values_list("pk", "slug"))
    out = {slug: {"relation": set(), "kind": set()} for slug in banks.values()}
    for vocabulary, model in (("relation", EdgeType), ("kind", EntryKind)):
        rows = model.objects.filter(Q(bank__isnull=True) | Q(bank_id__in=list(banks)))
        for bank_id, name in rows.values_list("bank_id", "name"):
            for pk, slug in banks.items():
                if bank_id is None or bank_id == pk:
                    out[slug][vocabulary].add(name)
    return {slug: {k: sorted(v) for k, v in vocab.items()} for slug, vocab in out.items()}


def _list_tools_sync(raw_token: str) -> list[Tool]:
    from django.db import close_old_connections

    close_old_connections()
    try:
        vocabularies = _vocabularies(raw_token)
    finally:
        close_old_connections()
    return [
        Tool(
            name=spec.name,
            description=spec.description,
            input_schema=input_schema(spec, vocabularies),
            annotations=ToolAnnotations(
                read_only_hint=spec.read_only,
                destructive_hint=False,
                idempotent_hint=spec.read_only,
                open_world_hint=False,
            ),
        )
        for spec in tool_specs()
    ]


def result_for(answer: dispatch.ToolAnswer) -> CallToolResult:
    """A tool result: the REST JSON as structured content; on failure ``isError`` with text
    starting with the REST error code (``forbidden`` for a missing scope, as API.md says)."""
    if answer.is_error:
        code = answer.error_code
        text = f"{code}: {answer.error_message}"
        if answer.status == 403:
            text = f"forbidden: {code}: {answer.error_message}"
        fields = (
            answer.data.get("error", {}).get("fields") if isinstance(answer.data, dict) else None
        )
        if fields:
            text += " " + json.dumps(fields, ensure_ascii=False, sort_keys=True)
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=answer.data if isinstance(answer.data, dict) else None,
            is_error=True,
        )
    data = answer.data if isinstance(answer.data, dict) else {"results": answer.data}
    return CallToolResult(
        # Compact separators: the text REST sends, which the query's token budget counts.
        content=[
            TextContent(
                type="text", text=json.dumps(data, ensure_ascii=False, separators=(",", ":"))
            )
        ],
        structured_content=data,
    )


def build_server(token_source: TokenSource) -> Server:
    """A server whose every call runs with the token ``token_source`` finds for it."""
    specs = {spec.name: spec for spec in tool_specs()}

    async def list_tools(
        ctx: ServerRequestContext, params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        tools = await sync_to_async(_list_tools_sync, thread_sensitive=False)(token_source(ctx))
        return ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        spec = specs.get(params.name)
        if spec is None:
            return CallToolResult(
                content=[TextContent(type="text", text=f"unknown_tool: No tool {params.name!r}.")],
                is_error=True,
            )
        try:
            answer = await sync_to_async(dispatch.call_tool, thread_sensitive=False)(
                spec, params.arguments, token_source(ctx)
            )
        except Exception:  # noqa: BLE001 — a tool error the model can read, never a protocol error
            logger.exception("MCP tool %s failed", params.name)
            answer = dispatch.ToolAnswer(
                500,
                {
                    "error": {
                        "code": "internal_error",
                        "message": "Something went wrong on our side; nothing was written.",
                        "fields": {},
                    }
                },
            )
        return result_for(answer)

    return Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
