"""Call a tool: every tool runs its action (``ToolSpec.action``) in process, as the token's
:class:`~kb.actions.base.Caller`, inside the same request context as an HTTP request (request
id, actor, one request log line, operations stamped with the id).

The action is the REST view's action too, so the tool's validation, its error codes and its
JSON equal REST's by construction: the bank and scope checks, the declared input and the
presenter are the action's. The tool's flat arguments are split as the action declares them
(path ids, query fields, body fields); errors are rendered by the REST exception handler.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from urllib.parse import quote

from django.db import close_old_connections
from rest_framework.exceptions import Throttled

from kb.inputs import check_json, check_path_and_query
from kb.models import AgentToken
from kb.services.tokens import authenticate_token, authenticate_token_for_bank
from mcpserver.compact import compact_answer
from mcpserver.tools import ToolSpec

REQUEST_LOG = logging.getLogger("config.serving.request")


@dataclass
class ToolAnswer:
    """What a tool returns: the REST status and JSON body."""

    status: int
    data: dict | list

    @property
    def is_error(self) -> bool:
        return self.status >= 400

    @property
    def error_code(self) -> str:
        if isinstance(self.data, dict) and isinstance(self.data.get("error"), dict):
            return str(self.data["error"].get("code") or "error")
        return "error"

    @property
    def error_message(self) -> str:
        if isinstance(self.data, dict) and isinstance(self.data.get("error"), dict):
            return str(self.data["error"].get("message") or "")
        return ""


def _error(status: int, code: str, message: str, fields: dict | None = None) -> ToolAnswer:
    return ToolAnswer(status, {"error": {"code": code, "message": message, "fields": fields or {}}})


def token_banks(raw_token: str) -> tuple[AgentToken | None, list[str]]:
    """The token and the slugs of its banks (None and [] for an unknown or revoked token)."""
    token = authenticate_token(raw_token) if raw_token else None
    if token is None:
        return None, []
    return token, sorted(token.banks.values_list("slug", flat=True))


def _bank_argument(arguments: dict) -> tuple[str | None, ToolAnswer | None]:
    """The ``bank`` argument, stripped (None when the call names no bank)."""
    bank = arguments.get("bank")
    if bank is None:
        return None, None
    if not isinstance(bank, str) or not bank.strip():
        return None, _error(400, "invalid_input", "bank must be a bank slug.", {"bank": "Slug."})
    return bank.strip(), None


@dataclass
class Authenticated:
    """A tool call's token, authenticated once, and the bank it acts on (read with it)."""

    token: AgentToken
    bank_slug: str
    held: dict


def authenticate(
    raw_token: str, bank_slug: str | None
) -> tuple[Authenticated | None, ToolAnswer | None]:
    """The token of a tool call, read once: with a named bank, the statement that
    authenticates it also reads that bank (as REST's authentication does); with none, the
    token's only bank (several: 400 ``bank_required``)."""
    if bank_slug is not None:
        token, bank = (
            authenticate_token_for_bank(raw_token, bank_slug) if raw_token else (None, None)
        )
        if token is None:
            return None, _error(401, "not_authenticated", "Unknown or revoked token.")
        return Authenticated(token, bank_slug, {bank_slug: bank}), None
    token = authenticate_token(raw_token) if raw_token else None
    if token is None:
        return None, _error(401, "not_authenticated", "Unknown or revoked token.")
    banks = sorted(token.banks.all(), key=lambda b: b.slug)
    if len(banks) != 1:
        return None, _error(
            400,
            "bank_required",
            "This token holds several banks: name one in `bank`.",
            {"bank": "Required: " + ", ".join(b.slug for b in banks)},
        )
    return Authenticated(token, banks[0].slug, {banks[0].slug: banks[0]}), None


def _path_value(value) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | str) and str(value).strip():
        return quote(str(value).strip(), safe="")
    return None


def call_action(
    spec: ToolSpec,
    bank_slug: str,
    arguments: dict,
    raw_token: str,
    *,
    authenticated: Authenticated | None = None,
) -> ToolAnswer:
    """Authenticate (unless ``call_tool`` already did), count the request, then run the
    tool's action as the token's :class:`~kb.actions.base.Caller` (the bank, scope and input
    checks are the action's, as over REST); any error becomes the REST envelope (the same
    handler renders it)."""
    from kb.actions.base import Caller
    from kb.api.errors import exception_handler
    from kb.services.ratelimit import count_request

    if authenticated is None:
        authenticated, problem = authenticate(raw_token, bank_slug)
        if problem is not None:
            return problem
    token = authenticated.token
    args = {k: v for k, v in arguments.items() if k != "bank"}
    caller = Caller.for_token(token, via="mcp")
    caller.held = authenticated.held  # the bank read with the token: Caller.bank reads nothing
    with request_context(caller, spec.name, bank_slug) as info:
        try:
            decision = count_request(token.pk, "all")
            if not decision.allowed:
                raise Throttled(wait=decision.retry_after)
            answer = run_action(spec.action, caller, bank_slug, args)
        except Exception as exc:  # noqa: BLE001 — rendered exactly as REST renders it
            response = exception_handler(exc, None)
            if response is None:
                raise
            answer = ToolAnswer(response.status_code, response.data)
        info.status = answer.status
        return answer


def run_action(action_class, caller, bank_slug: str, args: dict) -> ToolAnswer:
    """Split a tool's flat arguments as the action declares them (path ids, query fields,
    body fields) and run it."""
    ids = {}
    for name in action_class.path_ids:
        value = args.pop(name, None)
        if _path_value(value) is None:
            return _error(400, "invalid_input", f"{name} is required.", {name: "Required."})
        ids[name] = str(value).strip()
    query_names = set(action_class.Query().fields) if action_class.Query is not None else set()
    query = {k: v for k, v in args.items() if k in query_names}
    body = {k: v for k, v in args.items() if k not in query_names}
    # What REST's middleware and JSON parser check before any view: storable strings (a NUL
    # is ``invalid_string``, not a field error) and the nesting depth.
    check_path_and_query(ids, query)
    check_json(body)
    if action_class.Input is None and body:
        from kb.api.params import reject_unknown

        reject_unknown(body, query_names)
    action = action_class.prepare(caller, bank_slug, ids=ids, query=query, body=body)
    answer = action.run()
    return ToolAnswer(answer.status, answer.data)


@contextlib.contextmanager
def request_context(caller, tool: str, bank_slug: str):
    """The request context an HTTP request gets from the middleware, for one tool call: the
    caller's request id and actor on every log line and operation, and one request log line
    (method ``MCP``, path ``tool:<name>``) with status and duration."""
    from config.serving import context

    info = context.RequestInfo(
        caller.request_id, method="MCP", path=f"tool:{tool}", route=f"mcp:{tool}"
    )
    info.bank, info.actor = bank_slug, caller.actor
    info.status = 200
    begun = context.begin(info)
    started = time.perf_counter()
    try:
        yield info
    finally:
        elapsed = time.perf_counter() - started
        REQUEST_LOG.log(
            logging.WARNING if info.status >= 500 else logging.INFO,
            "MCP %s %s",
            tool,
            info.status,
            extra={
                "method": "MCP",
                "path": f"tool:{tool}",
                "route": f"mcp:{tool}",
                "status": info.status,
                "duration_ms": round(elapsed * 1000, 1),
                "operations": list(info.operation_ids),
            },
        )
        context.end(begun)


def _full_argument(spec: ToolSpec, arguments: dict) -> tuple[bool, ToolAnswer | None]:
    """Pop ``full`` (tools with a compact answer only): True asks for the whole REST answer."""
    if spec.compact is None:
        return True, None
    full = arguments.pop("full", None)
    if full is None:
        return False, None
    if not isinstance(full, bool):
        return False, _error(
            400, "invalid_input", "full must be true or false.", {"full": "Boolean."}
        )
    return full, None


def call_tool(spec: ToolSpec, arguments: dict | None, raw_token: str) -> ToolAnswer:
    """Run one tool call synchronously (call through ``sync_to_async`` from async code)."""
    close_old_connections()
    try:
        arguments = arguments or {}
        if not isinstance(arguments, dict):
            return _error(400, "invalid_body", "Tool arguments must be a JSON object.")
        arguments = dict(arguments)
        full, problem = _full_argument(spec, arguments)
        if problem is not None:
            return problem
        bank, problem = _bank_argument(arguments)
        if problem is not None:
            return problem
        # The token is authenticated here, once (it names the bank when the call does not).
        authenticated, problem = authenticate(raw_token, bank)
        if problem is not None:
            return problem
        answer = call_action(
            spec, authenticated.bank_slug, arguments, raw_token, authenticated=authenticated
        )
        if spec.compact is not None and not answer.is_error and not full:
            answer.data = compact_answer(spec.compact, answer.data)
        return answer
    finally:
        close_old_connections()
