"""Call a tool: its action directly when it has one (``ToolSpec.action``), else the REST
view it mirrors, in process, with the caller's token.

Going through the REST view (not a copy of its parsing) is what makes the tool's JSON, its
validation and its error codes equal REST's by construction: the view authenticates the token,
checks bank and scope, parses the same fields, calls the same service and renders with the
same presenter. No socket is involved; the view is called as a function with a request built
here, and its rendered JSON is read back.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time
from dataclasses import dataclass
from io import BytesIO
from urllib.parse import quote, urlencode

from django.core.handlers.wsgi import WSGIRequest
from django.db import close_old_connections
from django.urls import Resolver404, resolve
from rest_framework.exceptions import Throttled

from kb.errors import KbError
from kb.inputs import check_json, check_path_and_query
from kb.models import AgentToken
from kb.services.tokens import authenticate_token
from mcpserver.compact import compact_answer
from mcpserver.tools import ToolSpec

REQUEST_LOG = logging.getLogger("config.serving.request")
API_PREFIX = "/api/v1/"
SLUG = re.compile(r"[-a-zA-Z0-9_]+")


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


def _bank_argument(raw_token: str, arguments: dict) -> tuple[str | None, ToolAnswer | None]:
    bank = arguments.get("bank")
    if bank is not None:
        if not isinstance(bank, str) or not bank.strip():
            return None, _error(
                400, "invalid_input", "bank must be a bank slug.", {"bank": "Slug."}
            )
        return bank.strip(), None
    token, slugs = token_banks(raw_token)
    if token is None:
        return None, _error(401, "not_authenticated", "Unknown or revoked token.")
    if len(slugs) != 1:
        return None, _error(
            400,
            "bank_required",
            "This token holds several banks: name one in `bank`.",
            {"bank": "Required: " + ", ".join(slugs)},
        )
    return slugs[0], None


def _path_value(value) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | str) and str(value).strip():
        return quote(str(value).strip(), safe="")
    return None


def _query_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


def build_request(
    spec: ToolSpec, bank: str, arguments: dict, raw_token: str
) -> tuple[WSGIRequest | None, ToolAnswer | None]:
    """The Django request the REST client would have sent for this tool call."""
    args = {k: v for k, v in arguments.items() if k != "bank"}
    path = spec.path
    missing_ids = [name for name in spec.path_ids if _path_value(args.get(name)) is None]
    if missing_ids and spec.alt_path is not None:
        path = spec.alt_path
    elif missing_ids:
        name = missing_ids[0]
        return None, _error(400, "invalid_input", f"{name} is required.", {name: "Required."})
    values = {"bank": quote(bank, safe="")}
    for name in spec.path_ids:
        if name not in missing_ids:
            values[name] = _path_value(args.pop(name))
        else:
            args.pop(name, None)
    path = API_PREFIX + path.format(**values)
    if spec.method == "GET":
        query, body = args, None
    else:
        query = {k: v for k, v in args.items() if k in spec.query_fields}
        body = {k: v for k, v in args.items() if k not in spec.query_fields}
    payload = json.dumps(body).encode() if body is not None else b""
    environ = {
        "REQUEST_METHOD": spec.method,
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": urlencode({k: _query_value(v) for k, v in query.items() if v is not None}),
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "localhost",
        "HTTP_AUTHORIZATION": f"Bearer {raw_token}",
        "HTTP_ACCEPT": "application/json",
        "wsgi.input": BytesIO(payload),
        "wsgi.url_scheme": "http",
        "wsgi.errors": BytesIO(),
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if body is not None:
        environ["CONTENT_TYPE"] = "application/json"
        environ["CONTENT_LENGTH"] = str(len(payload))
    return WSGIRequest(environ), None


def call_action(spec: ToolSpec, bank_slug: str, arguments: dict, raw_token: str) -> ToolAnswer:
    """Authenticate, count the request, then run the tool's action as the token's
    :class:`~kb.actions.base.Caller` (the bank, scope and input checks are the action's, as over
    REST); any error becomes the REST envelope (the same handler renders it)."""
    from kb.actions.base import Caller
    from kb.api.errors import exception_handler
    from kb.services.ratelimit import count_request

    token = authenticate_token(raw_token) if raw_token else None
    if token is None:
        return _error(401, "not_authenticated", "Unknown or revoked token.")
    args = {k: v for k, v in arguments.items() if k != "bank"}
    caller = Caller.for_token(token, via="mcp")
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
        bank, problem = _bank_argument(raw_token, arguments)
        if problem is not None:
            return problem
        if spec.action is not None:
            answer = call_action(spec, bank, arguments, raw_token)
            if spec.compact is not None and not answer.is_error and not full:
                answer.data = compact_answer(spec.compact, answer.data)
            return answer
        request, problem = build_request(spec, bank, arguments, raw_token)
        if problem is not None:
            return problem
        try:
            match = resolve(request.path_info)
        except Resolver404:
            if not SLUG.fullmatch(bank):
                return _error(
                    404, "bank_not_found", f"No bank {bank!r} is available to this token."
                )
            return _error(404, "not_found", "Nothing is found at this address.")
        try:
            # The checks the REST middleware makes on path parts and query parameters.
            check_path_and_query(match.kwargs, request.GET)
        except KbError as exc:
            return _error(exc.status, exc.code, exc.message, exc.fields)
        response = match.func(request, *match.args, **match.kwargs)
        if hasattr(response, "render"):
            response.render()
        try:
            data = json.loads(response.content or b"null")
        except ValueError:
            data = {"error": {"code": "internal_error", "message": "Not JSON.", "fields": {}}}
        if response.status_code < 400 and not full:
            data = compact_answer(spec.compact, data)
        return ToolAnswer(response.status_code, data)
    finally:
        close_old_connections()
