"""The workflows REST contract of API.md: paths, fields, status codes."""

from __future__ import annotations

import pytest

from workflows.models import Finding, GapReport

pytestmark = pytest.mark.django_db


@pytest.fixture
def holey(flow):
    f = flow("Order to cash")
    start = f.step("Receive order", start=True)
    ok = f.decision("Credit ok?")
    f.chain(start, ok, f.step("Ship", owner=None, terminal=True))
    f.ok = ok
    return f


def gaps_url(bank, ref):
    return f"/api/v1/banks/{bank.slug}/workflows/{ref}/gaps"


def test_list_processes(holey, healthy, client_rw, bank):
    response = client_rw.get(f"/api/v1/banks/{bank.slug}/workflows/")
    assert response.status_code == 200
    body = response.json()
    assert [set(item) for item in body] == [{"id", "title", "open_findings", "generated_at"}] * 2
    by_title = {item["title"]: item for item in body}
    assert by_title["Order to cash"]["id"] == holey.process.short_id
    assert by_title["Order to cash"]["open_findings"] == 2
    assert by_title["Healthy order to cash"]["open_findings"] == 0
    assert all(item["generated_at"] for item in body)
    # Without the trailing slash: the same answer, no redirect.
    again = client_rw.get(f"/api/v1/banks/{bank.slug}/workflows")
    assert again.status_code == 200 and len(again.json()) == 2


def test_get_gaps_builds_the_first_report_then_reads_it(holey, client_rw, bank):
    assert not GapReport.objects.exists()
    response = client_rw.get(gaps_url(bank, holey.process.short_id))
    assert response.status_code == 200
    body = response.json()
    assert body["process"] == {"id": holey.process.short_id, "title": "Order to cash"}
    assert body["generated_at"]
    assert {(f["rule"], tuple(f["entries"])) for f in body["findings"]} == {
        ("single_branch_decision", (holey.ok.short_id,)),
        ("unowned_step", (Finding.objects.get(rule="unowned_step").entries[0],)),
    }
    for finding in body["findings"]:
        assert {"id", "rule", "entries", "message", "status"} <= set(finding)
        assert finding["status"] == "open" and isinstance(finding["id"], int)
        assert finding["message"]
    again = client_rw.get(gaps_url(bank, holey.process.short_id)).json()
    assert again == body and GapReport.objects.count() == 1


def test_post_gaps_regenerates_now_and_keeps_finding_ids(holey, client_rw, bank):
    first = client_rw.get(gaps_url(bank, holey.process.short_id)).json()
    holey.link(holey.ok, holey.step("Hold order", terminal=True), "precedes")
    response = client_rw.post(gaps_url(bank, holey.process.short_id))
    assert response.status_code == 200
    body = response.json()
    assert body["generated_at"] > first["generated_at"]
    assert [f["rule"] for f in body["findings"]] == ["unowned_step"]
    kept = next(f for f in first["findings"] if f["rule"] == "unowned_step")
    assert body["findings"][0]["id"] == kept["id"]
    assert GapReport.objects.count() == 2
    assert Finding.objects.get(rule="single_branch_decision").status == "resolved"


def test_post_needs_the_write_scope(holey, token_client, bank):
    reader = token_client(bank, scopes="read")
    assert reader.get(gaps_url(bank, holey.process.short_id)).status_code == 200
    response = reader.post(gaps_url(bank, holey.process.short_id))
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "missing_scope"
    assert GapReport.objects.count() == 1


def test_unknown_process_and_foreign_bank(holey, client_rw, bank, other_bank, token_client):
    step = holey.ok
    for ref in (step.short_id, "00000000", "not-an-id"):
        for method in ("get", "post"):
            response = getattr(client_rw, method)(gaps_url(bank, ref))
            assert response.status_code == 404, (ref, method)
            assert response.json()["error"]["code"] == "process_not_found"
    outsider = token_client(other_bank)
    response = outsider.get(gaps_url(bank, holey.process.short_id))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "bank_not_found"
    assert outsider.get(f"/api/v1/banks/{bank.slug}/workflows/").status_code == 404
    assert outsider.get(f"/api/v1/banks/{other_bank.slug}/workflows/").json() == []


def test_post_refuses_a_body_it_does_not_understand(holey, client_rw, bank):
    response = client_rw.post(
        gaps_url(bank, holey.process.short_id), {"force": True}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"force": "Unknown field."}
    response = client_rw.post(
        gaps_url(bank, holey.process.short_id), "[1]", content_type="application/json"
    )
    assert response.status_code == 400
    assert (
        client_rw.post(gaps_url(bank, holey.process.short_id), {}, format="json").status_code == 200
    )


def test_anonymous_callers_are_refused(holey, client, bank):
    response = client.get(gaps_url(bank, holey.process.short_id))
    assert response.status_code in (401, 403)
    assert "error" in response.json()


def test_staff_session_reads_gaps(holey, admin_client, bank):
    response = admin_client.get(gaps_url(bank, holey.process.short_id))
    assert response.status_code == 200
    assert response.json()["process"]["id"] == holey.process.short_id
