"""A local stand-in for an OpenAI-compatible chat-completions server (loopback only).

For tests and ``bench/extraction.py``: it answers ``POST …/chat/completions`` with whatever a
*responder* returns for the request body, so a test can script timeouts, 429s and malformed
answers, and the benchmark can replay recorded answers. Not used by the application itself.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    """What the stand-in sends: a status, headers, a body, after an optional delay."""

    status: int = 200
    body: bytes | str | dict = b""
    headers: dict = field(default_factory=dict)
    delay: float = 0.0


def chat_reply(content: str) -> Reply:
    """A well-formed chat-completions answer whose message content is ``content``."""
    return Reply(
        200,
        {
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content},
                 "finish_reason": "stop"}
            ],
        },
    )  # fmt: skip


Responder = Callable[[dict], Reply]


class ChatStandIn:
    """``with ChatStandIn(responder) as server: server.url`` — requests land in ``requests``."""

    def __init__(self, responder: Responder):
        self.responder = responder
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    body = {}
                outer.requests.append({"path": self.path, "body": body,
                                       "auth": self.headers.get("Authorization")})  # fmt: skip
                reply = (
                    outer.responder(body) if self.path.endswith("/chat/completions") else Reply(404)
                )
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body
                if isinstance(payload, dict):
                    payload = json.dumps(payload)
                if isinstance(payload, str):
                    payload = payload.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ChatStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def replay(recorded: dict[str, list[str]]) -> Responder:
    """Replay recorded answers: ``{document title: [first-pass content, gleaning content]}``.
    The document is the ``Title:`` line of the user message; the pass is the number of user
    messages so far."""

    def respond(body: dict) -> Reply:
        messages = body.get("messages") or []
        users = [m for m in messages if m.get("role") == "user"]
        if not users:
            return Reply(400, {"error": {"message": "no user message"}})
        first = users[0].get("content", "")
        title = first.split("\n", 1)[0].removeprefix("Title: ").strip()
        answers = recorded.get(title)
        if answers is None:
            return chat_reply('{"relationships": []}')
        turn = min(len(users), len(answers)) - 1
        return chat_reply(answers[turn])

    return respond
