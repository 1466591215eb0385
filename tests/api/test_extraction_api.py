"""REST of edge extraction: 202 jobs, the proposal queue with a cursor, decisions, tenancy, scope."""

from __future__ import annotations

import pytest

from graph.ingest.extract.run import extract_edges
from graph.models import Edge, EdgeProposal

pytestmark = pytest.mark.django_db


@pytest.fixture
def doc(bank, make_entry):
    make_entry("Sterile Supply Unit", kind="team", content="Cleans instruments.")
    make_entry("Theatres Directorate", kind="team", content="Runs theatres.")
    make_entry("Instrument Tracking", kind="service", content="Tracks trays.")
    return make_entry(
        "Theatre logistics",
        content=(
            "The Sterile Supply Unit is owned by the Theatres Directorate. "
            "Instrument Tracking requires the Sterile Supply Unit. "
            "Instrument Tracking is owned by the Porter Pool."
        ),
    )


@pytest.fixture
def curator(bank, token_client):
    return token_client(bank, scopes="read,curate")


def url(bank_slug: str, tail: str) -> str:
    return f"/api/v1/banks/{bank_slug}/{tail}"


def test_extraction_job_then_queue_then_accept(
    bank, doc, curator, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = curator.post(
            url("acme", "extractions"),
            {"entries": [doc.short_id], "extractor": "local"},
            format="json",
        )
    assert response.status_code == 202
    job = curator.get(f"/api/v1/jobs/{response.json()['job']}").json()
    assert job["status"] == "succeeded" and job["kind"] == "extract_edges"
    assert job["progress"] == {"done": 1, "total": 1, "phase": "done"}
    assert job["result"]["queued"] == 3

    page = curator.get(url("acme", "edge-proposals"), {"status": "open"}).json()
    assert page["next"] is None and len(page["results"]) == 3
    first = page["results"][0]
    assert set(first) >= {
        "id", "source", "span", "relation", "from", "to", "from_text", "to_text",
        "confidence", "extractor", "status",
    }  # fmt: skip
    assert first["source"] == doc.short_id and first["span"] in doc.content
    unresolved = next(p for p in page["results"] if p["to"] is None)
    assert (
        unresolved["to_text"] == "Porter Pool"
        and unresolved["from"]["title"] == "Instrument Tracking"
    )

    resolved = next(p for p in page["results"] if p["relation"] == "requires")
    response = curator.post(
        url("acme", f"edge-proposals/{resolved['id']}/decide"),
        {"decision": "accept", "reason": "stated plainly"},
        format="json",
    )
    assert response.status_code == 200
    body = response.json()
    assert (
        body["proposal"]["status"] == "accepted" and body["proposal"]["edge"] == body["edge"]["id"]
    )
    assert body["edge"]["source"] == "extracted"
    assert body["edge"]["evidence"]["quote"] == resolved["span"]
    assert Edge.objects.filter(pk=body["edge"]["id"], bank=bank).exists()

    again = curator.post(
        url("acme", f"edge-proposals/{resolved['id']}/decide"),
        {"decision": "reject"},
        format="json",
    )
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_decided"

    refused = curator.post(
        url("acme", f"edge-proposals/{unresolved['id']}/decide"),
        {"decision": "accept"},
        format="json",
    )
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "unresolved_end"
    rejected = curator.post(
        url("acme", f"edge-proposals/{unresolved['id']}/decide"),
        {"decision": "reject", "reason": "no such pool"},
        format="json",
    ).json()
    assert rejected["proposal"]["status"] == "rejected" and rejected["edge"] is None
    assert [
        p["id"]
        for p in curator.get(url("acme", "edge-proposals?status=rejected")).json()["results"]
    ] == [unresolved["id"]]


def test_cursor_pagination_walks_the_queue_once(bank, doc, curator):
    extract_edges(bank, entries=[doc.short_id])
    seen, cursor = [], None
    for _ in range(5):
        params = {"limit": 1, **({"cursor": cursor} if cursor else {})}
        page = curator.get(url("acme", "edge-proposals"), params).json()
        seen += [p["id"] for p in page["results"]]
        cursor = page["next"]
        if cursor is None:
            break
    expected = list(
        EdgeProposal.objects.filter(bank=bank)
        .order_by("-confidence", "pk")
        .values_list("pk", flat=True)
    )
    assert seen == expected and len(seen) == 3


@pytest.mark.parametrize(
    "params, field",
    [
        ({"cursor": "not-a-cursor!"}, "cursor"),
        ({"limit": "0"}, "limit"),
        ({"limit": "x"}, "limit"),
        ({"status": "maybe"}, "status"),
    ],
)
def test_bad_list_parameters_are_400(doc, curator, params, field):
    response = curator.get(url("acme", "edge-proposals"), params)
    assert response.status_code == 400 and field in response.json()["error"]["fields"]


@pytest.mark.parametrize(
    "body, code",
    [
        ({"extractor": "gpt-9"}, "unknown_extractor"),
        ({"entries": "all"}, "invalid_input"),
        ({"entries": ["nope0000"]}, "entry_not_found"),
        ({"entries": None, "colour": "red"}, "invalid_input"),
        ({"extractor": "llm"}, "extractor_not_configured"),  # no KB_EXTRACT_LLM_URL here
    ],
)
def test_bad_extraction_requests_are_400_and_queue_nothing(doc, curator, body, code):
    from kb.models import Job

    response = curator.post(url("acme", "extractions"), body, format="json")
    assert response.status_code == 400 and response.json()["error"]["code"] == code
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        {"decision": "maybe"},
        {"decision": "accept", "to": 5},
        {"decision": "reject", "reason": 3},
        [],
    ],
)
def test_bad_decisions_are_400(bank, doc, curator, body):
    extract_edges(bank, entries=[doc.short_id])
    pk = EdgeProposal.objects.filter(bank=bank).first().pk
    response = curator.post(url("acme", f"edge-proposals/{pk}/decide"), body, format="json")
    assert response.status_code == 400
    assert EdgeProposal.objects.get(pk=pk).status == "open"


def test_tenancy_foreign_bank_is_404_everywhere(bank, other_bank, doc, token_client):
    extract_edges(bank, entries=[doc.short_id])
    pk = EdgeProposal.objects.filter(bank=bank).first().pk
    outsider = token_client(other_bank, scopes="read,write,curate")
    for method, path, body in [
        ("get", url("acme", "edge-proposals"), None),
        ("post", url("acme", f"edge-proposals/{pk}/decide"), {"decision": "accept"}),
        ("post", url("acme", "extractions"), {"entries": None}),
    ]:
        response = getattr(outsider, method)(path, body, format="json")
        assert response.status_code == 404 and response.json()["error"]["code"] == "bank_not_found"
    # Its own bank does not see the proposal either.
    response = outsider.post(
        url("globex", f"edge-proposals/{pk}/decide"), {"decision": "accept"}, format="json"
    )
    assert response.status_code == 404 and response.json()["error"]["code"] == "proposal_not_found"
    assert outsider.get(url("globex", "edge-proposals")).json()["results"] == []
    assert EdgeProposal.objects.get(pk=pk).status == "open"


def test_curate_scope_is_required(bank, doc, token_client):
    extract_edges(bank, entries=[doc.short_id])
    pk = EdgeProposal.objects.filter(bank=bank).first().pk
    writer = token_client(bank, scopes="read,write")
    for method, path, body in [
        ("get", url("acme", "edge-proposals"), None),
        ("post", url("acme", f"edge-proposals/{pk}/decide"), {"decision": "accept"}),
        ("post", url("acme", "extractions"), {"entries": None}),
    ]:
        response = getattr(writer, method)(path, body, format="json")
        assert response.status_code == 403
    assert EdgeProposal.objects.get(pk=pk).status == "open"


def test_listing_costs_the_same_statements_whatever_the_page_size(bank, doc, curator, make_entry):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    extract_edges(bank, entries=[doc.short_id])
    curator.get(url("acme", "edge-proposals"))  # the token's last_used moves once a minute
    counts = []
    for limit in (1, 3):
        with CaptureQueriesContext(connection) as ctx:
            page = curator.get(url("acme", "edge-proposals"), {"limit": limit}).json()
        assert len(page["results"]) == limit
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]
