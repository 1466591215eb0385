"""One agent session over MCP, checked call by call against the REST answer.

Shared by the stdio and the streamable-HTTP tests: ``run_session`` drives a connected SDK
``Client`` through every tool and compares each answer with what the REST API says about the
same thing (read in this process, in a worker thread, through DRF's test client).
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import anyio
from django.db import connection
from rest_framework.test import APIClient

ROOT = Path(__file__).resolve().parents[2]

TOOL_NAMES = {
    "query_knowledge_bank",
    "report_learning",
    "get_entry",
    "link_entries",
    "unlink_entries",
    "resolve",
    "traverse",
    "retire_entry",
    "verify_entry",
    "recall_anchors",
    "claim_work",
    "release_claim",
    "get_context",
    "workflow_gaps",
    "list_edge_proposals",
    "decide_edge_proposal",
}


def server_env() -> dict[str, str]:
    """The environment of a server process on this test database (the hashing embedder, as
    in this process, so both sides rank a query alike)."""
    env = {
        "KB_DATABASE_NAME": connection.settings_dict["NAME"],
        "KB_EMBEDDER": "hashing",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    if os.environ.get("DATABASE_URL"):
        env["DATABASE_URL"] = (
            os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + connection.settings_dict["NAME"]
        )
    return env


def manage_py() -> list[str]:
    return [sys.executable, str(ROOT / "manage.py")]


def start_uvicorn(port: int, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "config.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--lifespan",
            "on",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env={**os.environ, **env},
    )


def without_timings(value):
    """The answer less what differs between two runs of the same read (``took_ms``)."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k != "took_ms"}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def as_stored(answer: dict) -> dict:
    """A write's answer less its write feedback (``warnings``, ``similar``): what a GET of the
    written thing answers afterwards."""
    return {k: v for k, v in answer.items() if k not in ("warnings", "similar")}


class Rest:
    """The REST API of this process, called from async code in a worker thread."""

    def __init__(self, raw_token: str, bank: str):
        self.raw_token = raw_token
        self.base = f"/api/v1/banks/{bank}"

    def _call(self, method: str, path: str, body=None, params=None):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {self.raw_token}")
        try:
            if method == "GET":
                response = client.get(self.base + path, params or {})
            else:
                response = client.post(self.base + path, body or {}, format="json")
            return response.status_code, response.json()
        finally:
            connection.close()

    async def get(self, path: str, **params):
        return await anyio.to_thread.run_sync(lambda: self._call("GET", path, params=params))

    async def post(self, path: str, body: dict):
        return await anyio.to_thread.run_sync(lambda: self._call("POST", path, body))


async def ok(client, name: str, arguments: dict) -> dict:
    result = await client.call_tool(name, arguments)
    text = result.content[0].text if result.content else ""
    assert not result.is_error, f"{name}: {text}"
    return result.structured_content


async def fails(client, name: str, arguments: dict, code: str):
    result = await client.call_tool(name, arguments)
    text = result.content[0].text
    assert result.is_error, f"{name} should fail with {code}"
    assert text.startswith(code + ":"), text
    return result


async def run_session(client, rest: Rest) -> None:
    """Every tool once (most twice), each answer equal to REST's."""
    await check_listing(client)
    recipe, gotcha, process, edge = await write_entries(client, rest)
    await read_and_search(client, rest, recipe, gotcha)
    claim = await claims_context_and_gaps(client, rest, recipe, process)
    await verify_retire_release_unlink(client, rest, gotcha, claim, edge)
    await check_failures(client, rest, recipe)


async def check_listing(client) -> None:
    """Every tool is listed, with the bank's vocabulary and a 'when not to use it'."""
    listed = await client.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == TOOL_NAMES and len(listed.tools) == len(TOOL_NAMES)
    relation = tools["link_entries"].input_schema["properties"]["relation"]
    assert "corrects" in relation["enum"] and "depends_on" not in relation["enum"]
    assert "gotcha" in tools["report_learning"].input_schema["properties"]["kind"]["enum"]
    assert all("Not " in tool.description for tool in listed.tools)  # when not to use it


async def write_entries(client, rest: Rest) -> tuple[dict, dict, dict, dict]:
    """report_learning three times (one with a connection) and link_entries."""
    recipe = await ok(
        client,
        "report_learning",
        {
            "title": "Log in to production with Playwright using the lk_csrf cookie",
            "content": "In web/e2e/login.ts read the lk_csrf cookie, not the meta tag.",
            "useful_for": "Use when a scripted production login answers 403.",
            "kind": "recipe",
            "lifetime": {"durable": True},
            "anchors": {"files": ["web/e2e/login.ts"], "symbols": ["loginFixture"]},
            "full": True,
        },
    )
    assert "warnings" in recipe and "similar" in recipe
    assert await rest.get(f"/entries/{recipe['id']}") == (200, as_stored(recipe))
    gotcha = await ok(
        client,
        "report_learning",
        {
            "title": "Production login 403 is a duplicated CSRF meta tag",
            "content": "The gateway rewrite duplicates the csrf meta tag on HTTP/2.",
            "kind": "gotcha",
            "lifetime": {"durable": True},
            "connections": [
                {
                    "id": recipe["id"],
                    "relation": "clarifies",
                    "note": "Explains why that fixture avoids the DOM meta tag.",
                }
            ],
            "full": True,
        },
    )
    assert gotcha["edges"][0]["entry"]["id"] == recipe["id"]
    assert await rest.get(f"/entries/{gotcha['id']}") == (200, as_stored(gotcha))
    process = await ok(
        client,
        "report_learning",
        {
            "title": "Production release process",
            "content": "How a release reaches production.",
            "kind": "process",
            "lifetime": {"durable": True},
        },
    )
    edge = await ok(
        client,
        "link_entries",
        {
            "from": recipe["id"],
            "to": process["id"],
            "relation": "see_also",
            "note": "The release whose smoke test uses this login.",
            "full": True,
        },
    )
    assert await rest.get(f"/edges/{edge['id']}") == (200, as_stored(edge))

    return recipe, gotcha, process, edge


async def read_and_search(client, rest: Rest, recipe: dict, gotcha: dict) -> None:
    """get_entry, compact answers, resolve, the query, traverse, recall_anchors."""
    assert await rest.get(f"/entries/{recipe['id']}") == (
        200,
        await ok(client, "get_entry", {"id": recipe["id"], "full": True}),
    )
    await check_compact_answers(client, rest, recipe, gotcha)
    resolved = await ok(client, "resolve", {"q": recipe["title"]})
    assert resolved["status"] == "resolved"
    assert await rest.get("/resolve", q=recipe["title"]) == (200, resolved)

    query = {"query": "production login 403 csrf", "lexical": True, "limit": 3}
    answer = await ok(client, "query_knowledge_bank", query)
    assert answer["results"], answer
    status, expected = await rest.post("/query", query)
    assert status == 200 and without_timings(expected) == without_timings(answer)

    walk = {"start": recipe["id"], "relations": ["see_also", "clarifies"], "direction": "both"}
    now = dt.datetime.now(dt.UTC).isoformat()
    walk.update(max_depth=2, valid_at=now, as_of=now)  # "now" twice would differ by a moment
    walked = await ok(client, "traverse", walk)
    assert walked["paths"]
    status, expected = await rest.post("/traverse", walk)
    assert status == 200, expected
    assert without_timings(expected) == without_timings(walked), (expected, walked)

    anchors = {"files": ["web/e2e/login.ts"]}
    recalled = await ok(client, "recall_anchors", anchors)
    assert [r["id"] for r in recalled["results"]] == [recipe["id"]]
    assert await rest.post("/recall/anchors", anchors) == (200, recalled)


async def claims_context_and_gaps(client, rest: Rest, recipe: dict, process: dict) -> dict:
    """claim_work (and claim_held), get_context, workflow_gaps."""
    claim = await ok(
        client, "claim_work", {"subject": "web/e2e/login.ts", "holder": "agent-1", "note": "fix"}
    )
    assert await rest.get("/claims", subject="web/e2e/login.ts") == (200, {"results": [claim]})
    held = await fails(
        client, "claim_work", {"subject": "web/e2e/login.ts", "holder": "agent-2"}, "claim_held"
    )
    assert held.structured_content["error"]["fields"]["holder"] == "agent-1"
    assert held.structured_content["error"]["fields"]["since"] == claim["since"]
    status, rest_held = await rest.post(
        "/claims", {"subject": "web/e2e/login.ts", "holder": "agent-3"}
    )
    assert (
        status == 409 and rest_held["error"]["fields"] == held.structured_content["error"]["fields"]
    )

    context = {"task": "fix the production login 403", "files": ["web/e2e/login.ts"]}
    context["budget_tokens"] = 600
    bundle = await ok(client, "get_context", context)
    assert recipe["id"] in bundle["entries"] and "agent-1" in bundle["text"]
    assert bundle["tokens"] <= 600
    assert await rest.post("/context", context) == (200, bundle)

    gaps = await ok(client, "workflow_gaps", {"process_id": process["id"]})
    assert gaps["process"]["id"] == process["id"]
    assert await rest.get(f"/workflows/{process['id']}/gaps") == (200, gaps)
    processes = await ok(client, "workflow_gaps", {})
    status, listed = await rest.get("/workflows/")  # a JSON list: MCP wraps it in "results"
    assert status == 200 and processes == {"results": listed}

    return claim


async def verify_retire_release_unlink(
    client, rest: Rest, gotcha: dict, claim: dict, edge: dict
) -> None:
    verified = await ok(
        client, "verify_entry", {"id": gotcha["id"], "note": "reproduced", "full": True}
    )
    assert verified["verified_at"]
    assert await rest.get(f"/entries/{gotcha['id']}") == (200, verified)
    retired = await ok(
        client,
        "retire_entry",
        {
            "id": gotcha["id"],
            "reason": "The gateway no longer rewrites the page.",
            "evidence": "gateway changelog 2026-11: html rewrite removed",
            "full": True,
        },
    )
    assert retired["status"] == "retired"
    assert await rest.get(f"/entries/{gotcha['id']}") == (200, retired)

    released = await ok(client, "release_claim", {"claim_id": claim["id"]})
    assert released["released_at"] and released["id"] == claim["id"]
    assert await rest.get("/claims") == (200, {"results": []})

    await fails(client, "unlink_entries", {"edge_id": edge["id"]}, "reason_required")
    status, refused = await rest.post(f"/edges/{edge['id']}/unlink", {})
    assert status == 400 and refused["error"]["code"] == "reason_required"
    unlinked = await ok(
        client, "unlink_entries", {"edge_id": edge["id"], "reason": "wrong", "full": True}
    )
    assert await rest.get(f"/edges/{edge['id']}") == (200, unlinked)


async def check_failures(client, rest: Rest, recipe: dict) -> None:
    """Error codes as REST's, and the duplicate check."""
    await fails(client, "get_entry", {"id": "nothing1"}, "entry_not_found")
    await fails(client, "get_entry", {"bank": "globex", "id": recipe["id"]}, "bank_not_found")
    await fails(client, "get_entry", {"bank": "no-such-bank", "id": "x"}, "bank_not_found")
    await fails(client, "get_entry", {"bank": "not a slug!", "id": "x"}, "bank_not_found")
    await fails(client, "claim_work", {"subject": ""}, "invalid_input")
    await check_error_vocabulary(client, rest)

    # A near-exact duplicate of the recipe is refused, naming it; allow_duplicate stores it.
    copy = {
        "title": "Log in to production with Playwright using the lk_csrf cookie.",
        "content": "In web/e2e/login.ts, read the lk_csrf cookie -- not the meta tag!",
        "kind": "recipe",
        "lifetime": {"durable": True},
    }
    refused = await fails(client, "report_learning", copy, "duplicate_entry")
    assert recipe["id"] in refused.content[0].text
    status, body = await rest.post("/entries", copy)
    assert status == 409 and body["error"]["fields"] == {"existing": recipe["id"]}
    stored = await ok(client, "report_learning", {**copy, "allow_duplicate": True})
    assert stored["id"] != recipe["id"] and stored["title"] == copy["title"]


COMPACT_KEYS = {"id", "title", "kind", "status", "warnings"}


async def check_compact_answers(client, rest: Rest, recipe: dict, gotcha: dict) -> None:
    """Without ``full`` the entry tools answer compactly (issue 22: a long entry was echoed
    whole by report_learning, retire_entry and get_entry)."""
    long_text = " ".join(f"Line {i} of the cookie-jar recipe names step {i}." for i in range(400))
    written = await ok(
        client,
        "report_learning",
        {
            "title": "Cookie-jar login recipe, long form",
            "content": long_text,
            "kind": "recipe",
            "lifetime": {"durable": True},
        },
    )
    assert set(written) == COMPACT_KEYS | {"similar"}, written
    assert written["status"] == "live" and written["kind"] == "recipe"
    status, stored = await rest.get(f"/entries/{written['id']}")
    assert status == 200 and stored["content"] == long_text  # stored whole, answered compactly
    read = await ok(client, "get_entry", {"id": written["id"]})
    assert COMPACT_KEYS <= set(read) and "metadata" not in read and "steps" not in read
    assert read["truncated"] is True and len(read["content"]) <= 2000
    assert read["content"].endswith("…[truncated]")
    shorter = await ok(client, "get_entry", {"id": written["id"], "max_chars": 100})
    assert len(shorter["content"]) <= 100 and shorter["truncated"] is True
    status, via_rest = await rest.get(f"/entries/{written['id']}", max_chars=100)
    assert status == 200 and via_rest["content"] == shorter["content"]
    pointers = (await ok(client, "get_entry", {"id": gotcha["id"]}))["edges"]
    assert pointers == [
        {
            "edge_id": pointers[0]["edge_id"],
            "relation": "clarifies",
            "direction": "out",
            "id": recipe["id"],
            "note": "Explains why that fixture avoids the DOM meta tag.",
        }
    ]
    verified = await ok(client, "verify_entry", {"id": written["id"]})
    assert set(verified) == COMPACT_KEYS | {"verified_at"}
    link = await ok(
        client,
        "link_entries",
        {"from": written["id"], "to": recipe["id"], "relation": "see_also", "note": "Long form."},
    )
    assert set(link) == {"id", "from", "to", "relation", "note", "warnings"}
    retired = await ok(
        client,
        "retire_entry",
        {"id": written["id"], "reason": "Duplicate of the short recipe.", "evidence": "x" * 3000},
    )
    assert set(retired) == COMPACT_KEYS | {"retired", "verified_at"}, retired
    assert retired["status"] == "retired"
    await fails(client, "get_entry", {"id": written["id"], "full": "yes"}, "invalid_input")


async def check_error_vocabulary(client, rest: Rest) -> None:
    """Issue 22: one code per failure class, over MCP as over REST."""
    await fails(client, "resolve", {"q": "a\x00b"}, "invalid_string")
    status, body = await rest.get("/resolve", q="a\x00b")
    assert status == 400 and body["error"]["code"] == "invalid_string"
    await fails(client, "unlink_entries", {"edge_id": "abc", "reason": "r"}, "invalid_id")
    await fails(client, "release_claim", {"claim_id": "x"}, "invalid_id")
    result = await fails(
        client,
        "query_knowledge_bank",
        {"query": "login", "kinds": ["recipe", "banana"]},
        "invalid_value",
    )
    assert "banana" in result.content[0].text and "recipe" in result.content[0].text


async def run_read_only_session(client, recipe_query: str = "anything") -> None:
    """A read-only token: reads work, every write tool answers ``forbidden``."""
    assert len((await client.list_tools()).tools) == len(TOOL_NAMES)
    await ok(client, "query_knowledge_bank", {"query": recipe_query, "lexical": True})
    for name, arguments in [
        ("claim_work", {"subject": "x", "holder": "y"}),
        ("report_learning", {"title": "t", "lifetime": {"durable": True}}),
        ("release_claim", {"claim_id": 1}),
        ("link_entries", {"from": "a", "to": "b", "relation": "cites"}),
    ]:
        result = await fails(client, name, arguments, "forbidden")
        assert "missing_scope" in result.content[0].text
