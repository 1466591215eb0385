"""The MCP leg of the twin tests (issue 23): the same use case through a REST request and an
MCP tool call, on two identical banks, leaves the same rows and the same operations — the
operations' actors too, since both callers are agent tokens of one name.

The tool calls go through ``mcpserver.dispatch.call_tool`` (what the server runs for a
``tools/call``) in the test's transaction; the SDK framing itself is covered by
``tests/mcp``."""

from __future__ import annotations

import pytest

from kb.models import Bank, Claim, Entry, Operation
from kb.services.tokens import create_token
from mcpserver.dispatch import call_tool
from mcpserver.tools import tool_specs
from tests.graph.test_admin_twins import _world, api_url, shape

# call_tool closes stale connections as a server does, so no test-wide transaction.
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def twins(db, token_client):
    rest_bank = Bank.objects.create(slug="rest", name="REST side")
    mcp_bank = Bank.objects.create(slug="mcp", name="MCP side")
    _, raw = create_token("test-agent", [mcp_bank], "read,write,curate")
    return {
        "rest": (rest_bank, _world(rest_bank)),
        "mcp": (mcp_bank, _world(mcp_bank)),
        "api": token_client(rest_bank),
        "token": raw,
    }


def tool(twins, name: str, **arguments):
    spec = next(s for s in tool_specs() if s.name == name)
    answer = call_tool(spec, {"bank": "mcp", **arguments}, twins["token"])
    assert not answer.is_error, answer.data
    return answer.data


def operations(bank: Bank) -> list[tuple]:
    """Kind, actor, reason (entry ids named by title: the banks' ids differ) and detail keys."""
    ids = dict(Entry.objects.filter(bank=bank).values_list("short_id", "title"))

    def words(text: str) -> str:
        for sid, title in ids.items():
            text = text.replace(sid, f"<{title}>")
        return text

    return [
        (op.kind, op.actor, words(op.reason), sorted(op.details))
        for op in Operation.objects.filter(bank=bank).order_by("pk")
    ]


def assert_same(twins) -> None:
    rest, mcp = twins["rest"][0], twins["mcp"][0]
    assert shape(rest) == shape(mcp)
    assert operations(rest) == operations(mcp)


def test_report_learning_with_connections_is_the_same_through_rest_and_mcp(twins):
    rest_bank, rest = twins["rest"]
    _, mcp = twins["mcp"]

    def body(world):
        return {
            "title": "Epsilon",
            "content": "Epsilon corrects what Alpha says about the port.",
            "lifetime": {"durable": True},
            "connections": [
                {"id": world["Alpha"].short_id, "relation": "corrects", "note": "The port."}
            ],
        }

    response = twins["api"].post(api_url(rest_bank, "entries"), body(rest), format="json")
    assert response.status_code == 201, response.content
    tool(twins, "report_learning", **body(mcp))
    assert_same(twins)


def test_get_entry_answers_what_rest_answers(twins):
    rest_bank, rest = twins["rest"]
    _, mcp = twins["mcp"]
    rest_answer = twins["api"].get(api_url(rest_bank, f"entries/{rest['Beta'].short_id}"))
    mcp_answer = tool(twins, "get_entry", id=mcp["Beta"].short_id, full=True)
    assert rest_answer.status_code == 200
    strip = ("id", "created_at", "updated_at", "edges")
    assert {k: v for k, v in rest_answer.json().items() if k not in strip} == {
        k: v for k, v in mcp_answer.items() if k not in strip
    }
    assert [e["relation"] for e in rest_answer.json()["edges"]] == [
        e["relation"] for e in mcp_answer["edges"]
    ]


def test_retire_and_verify_are_the_same_through_rest_and_mcp(twins):
    rest_bank, rest = twins["rest"]
    _, mcp = twins["mcp"]
    api, sid, mid = twins["api"], rest["Gamma"].short_id, mcp["Gamma"].short_id
    verify = api.post(
        api_url(rest_bank, f"entries/{sid}/verify"), {"note": "ran it"}, format="json"
    )
    assert verify.status_code == 200, verify.content
    tool(twins, "verify_entry", id=mid, note="ran it")
    assert_same(twins)

    retire = {"reason": "replaced", "evidence": "The old pipeline was switched off on 1 May."}
    response = api.post(api_url(rest_bank, f"entries/{sid}/retire"), retire, format="json")
    assert response.status_code == 200, response.content
    tool(twins, "retire_entry", id=mid, **retire)
    assert_same(twins)
    assert [op[0] for op in operations(rest_bank)][-2:] == ["verify", "retire"]


def test_claim_and_release_are_the_same_through_rest_and_mcp(twins):
    rest_bank, _ = twins["rest"]
    mcp_bank, _ = twins["mcp"]
    claim = {"subject": "migrate reports", "holder": "agent-1", "note": "on it"}
    response = twins["api"].post(api_url(rest_bank, "claims"), claim, format="json")
    assert response.status_code == 201, response.content
    made = tool(twins, "claim_work", **claim)
    renewed = twins["api"].post(api_url(rest_bank, "claims"), claim, format="json")
    assert renewed.status_code == 200
    tool(twins, "claim_work", **claim)
    twins["api"].post(
        api_url(rest_bank, f"claims/{response.json()['id']}/release"),
        {"reason": "done"},
        format="json",
    )
    tool(twins, "release_claim", claim_id=made["id"], reason="done")

    def claims(bank):
        return [
            (c.subject, c.holder, c.note, c.released_at is not None)
            for c in Claim.objects.filter(bank=bank).order_by("pk")
        ]

    assert claims(rest_bank) == claims(mcp_bank) == [("migrate reports", "agent-1", "on it", True)]
    assert_same(twins)


def test_admin_entry_create_and_edit_match_rest_and_mcp(twins, admin_client):
    """The admin's entry form runs the same create and edit actions: the rows and the
    operations (kind, reason, details) equal REST's and MCP's; only the actor names the staff
    member instead of the token."""
    from django.urls import reverse

    from tests.graph.test_admin_twins import _entry_form

    rest_bank, rest = twins["rest"]
    mcp_bank, _ = twins["mcp"]
    admin_bank = Bank.objects.create(slug="adm", name="Admin side")
    adm = _world(admin_bank)
    learning = {
        "title": "Epsilon",
        "content": "Releases ship on Tuesdays.",
        "summary": "Ship day",
        "kind": "fact",
        "systems": ["release", "ci"],
        "lifetime": {"durable": True},
    }
    created = twins["api"].post(api_url(rest_bank, "entries"), learning, format="json")
    assert created.status_code == 201, created.content
    tool(twins, "report_learning", **learning)
    response = admin_client.post(
        reverse("admin:kb_entry_add"),
        _entry_form(
            None,
            admin_bank,
            title="Epsilon",
            content="Releases ship on Tuesdays.",
            summary="Ship day",
            systems="release\nci",
        ),
    )
    assert response.status_code == 302, response.context["adminform"].form.errors

    def without_actor(bank):
        return [(kind, reason, details) for kind, _, reason, details in operations(bank)]

    assert shape(rest_bank) == shape(mcp_bank) == shape(admin_bank)
    assert without_actor(rest_bank) == without_actor(mcp_bank) == without_actor(admin_bank)
    made = Operation.objects.filter(bank=admin_bank).latest("pk")
    assert (made.kind, made.actor) == ("create", "staff:admin")
    assert Entry.objects.get(bank=admin_bank, title="Epsilon").created_by == "staff:admin"

    # An edit (MCP has no edit tool): the PATCH and the change form write the same operation.
    patch = {"title": "Delta 2", "tasks": ["ship"]}
    sid = rest["Delta"].short_id
    patched = twins["api"].patch(api_url(rest_bank, f"entries/{sid}"), patch, format="json")
    assert patched.status_code == 200, patched.content
    url = reverse("admin:kb_entry_change", args=[adm["Delta"].pk])
    response = admin_client.post(
        url, _entry_form(adm["Delta"], admin_bank, title="Delta 2", tasks="ship")
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert shape(rest_bank)["entries"] == shape(admin_bank)["entries"]
    assert without_actor(rest_bank) == without_actor(admin_bank)
    rest_op = Operation.objects.filter(bank=rest_bank).latest("pk")
    admin_op = Operation.objects.filter(bank=admin_bank).latest("pk")
    assert rest_op.details == {**admin_op.details, "entry": sid}
    assert rest_op.details["fields"] == ["tasks", "title"]
