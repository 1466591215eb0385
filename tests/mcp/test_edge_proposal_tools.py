"""The edge-proposal tools mirror REST: same JSON, same scope and tenancy answers."""

from __future__ import annotations

import pytest

from graph.ingest.extract.run import extract_edges
from graph.models import Edge, EdgeProposal
from kb.services.tokens import create_token
from mcpserver.dispatch import call_tool
from mcpserver.tools import tool_specs

# call_tool closes stale connections as a server does, so no test-wide transaction.
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def spec(name):
    return next(s for s in tool_specs() if s.name == name)


@pytest.fixture
def queued(bank, make_entry):
    make_entry("Sterile Supply Unit", kind="team", content="Cleans instruments.")
    make_entry("Theatres Directorate", kind="team", content="Runs theatres.")
    doc = make_entry(
        "Theatre logistics", content="The Sterile Supply Unit is owned by the Theatres Directorate."
    )
    extract_edges(bank, entries=[doc.short_id])
    return EdgeProposal.objects.get(bank=bank)


def test_list_and_accept_through_the_tools(bank, queued):
    _, raw = create_token("curator", [bank], "read,curate")
    listed = call_tool(spec("list_edge_proposals"), {"status": "open", "limit": 10}, raw)
    assert listed.status == 200 and [p["id"] for p in listed.data["results"]] == [queued.pk]
    assert listed.data["results"][0]["relation"] == "owned_by" and listed.data["next"] is None

    answer = call_tool(
        spec("decide_edge_proposal"), {"proposal_id": queued.pk, "decision": "accept"}, raw
    )
    assert answer.status == 200, answer.data
    assert answer.data["edge"]["source"] == "extracted"
    assert Edge.objects.filter(pk=answer.data["edge"]["id"], bank=bank).exists()


def test_scope_and_tenancy_apply_as_over_rest(bank, other_bank, queued):
    _, writer = create_token("writer", [bank], "read,write")
    refused = call_tool(
        spec("decide_edge_proposal"), {"proposal_id": queued.pk, "decision": "accept"}, writer
    )
    assert refused.is_error and refused.status == 403
    _, outsider = create_token("outsider", [other_bank], "read,curate")
    foreign = call_tool(
        spec("list_edge_proposals"), {"bank": bank.slug, "status": "open"}, outsider
    )
    assert foreign.status == 404 and foreign.error_code == "bank_not_found"
    queued.refresh_from_db()
    assert queued.status == "open"
