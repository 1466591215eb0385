"""One ASGI application for the whole site: ``/mcp`` to the MCP streamable-HTTP app, every
other path to Django, and the lifespan that runs the MCP session manager.

Django's ASGI handler does not speak the lifespan protocol and a mounted app's own lifespan
never runs, so this router answers lifespan itself and enters the session manager for the
life of the process. The MCP endpoint is stateless (no session affinity), so any number of
worker processes can serve it, and answers JSON rather than an SSE stream (no tool streams).
"""

from __future__ import annotations

import contextlib
import json

from asgiref.sync import sync_to_async
from django.conf import settings

from kb.services.tokens import authenticate_token
from mcpserver.server import bearer_from_request, build_server

MCP_PATH = "/mcp"


def _transport_security():
    """DNS-rebinding protection that accepts the hosts Django accepts."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = [h for h in settings.ALLOWED_HOSTS if h]
    if not hosts or "*" in hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    allowed_hosts, allowed_origins = [], []
    for host in hosts:
        name = host.lstrip(".")
        allowed_hosts += [name, f"{name}:*"]
        allowed_origins += [
            f"http://{name}",
            f"http://{name}:*",
            f"https://{name}",
            f"https://{name}:*",
        ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )


def _bearer(scope) -> str:
    for name, value in scope.get("headers") or []:
        if name == b"authorization":
            parts = value.decode("latin-1").split()
            if len(parts) == 2 and parts[0].lower() == "bearer":
                return parts[1]
    return ""


async def _unauthorised(send) -> None:
    body = json.dumps(
        {
            "error": {
                "code": "not_authenticated",
                "message": "Send a valid token as 'Authorization: Bearer <token>'.",
                "fields": {},
            }
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer realm="mcp"'),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _token_is_valid(raw: str) -> bool:
    from django.db import close_old_connections

    close_old_connections()
    try:
        return authenticate_token(raw) is not None
    finally:
        close_old_connections()


class SiteRouter:
    """``/mcp`` → MCP (token checked first), lifespan → the MCP session manager, else Django."""

    def __init__(self, django_app):
        self.django_app = django_app
        self.server = build_server(bearer_from_request)
        self.mcp_app = self.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            json_response=True,
            transport_security=_transport_security(),
        )

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        path = scope.get("path", "")
        if scope["type"] == "http" and (path == MCP_PATH or path.startswith(MCP_PATH + "/")):
            raw = _bearer(scope)
            if not raw or not await sync_to_async(_token_is_valid, thread_sensitive=False)(raw):
                await _unauthorised(send)
                return
            await self.mcp_app(scope, receive, send)
            return
        await self.django_app(scope, receive, send)

    async def _lifespan(self, receive, send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        async with contextlib.AsyncExitStack() as stack:
            try:
                await stack.enter_async_context(self.server.session_manager.run())
            except Exception as exc:  # noqa: BLE001 — reported to the server, which stops
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            await send({"type": "lifespan.startup.complete"})
            while True:
                message = await receive()
                if message["type"] == "lifespan.shutdown":
                    break
        await send({"type": "lifespan.shutdown.complete"})
