"""The claims list and a job's status are actions (issue 23): the REST views only hand the
request to them, and a job, command or admin page runs the same action with the same checks
and the same JSON."""

from __future__ import annotations

import pytest

from kb.actions.base import Caller
from kb.actions.claims import ListClaims
from kb.actions.jobs import JobStatusAction
from kb.actions.staff import execute_as
from kb.errors import KbError
from kb.models import Job
from kb.services import claims

pytestmark = pytest.mark.django_db


def test_the_claims_list_action_answers_what_rest_answers(bank, token_client):
    claims.claim(bank, "rotate keys", "agent:a", note="half done")
    claims.claim(bank, "fix login", "agent:b")
    api = token_client(bank, scopes="read")
    url = f"/api/v1/banks/{bank.slug}/claims"
    system = Caller.system("system", via="command")
    for query in ({}, {"subject": "fix login"}, {"limit": "1"}):
        rest = api.get(url, query)
        assert rest.status_code == 200
        answer = ListClaims.prepare(system, bank.slug, query=query).run()
        assert answer.status == 200 and answer.data == rest.json()
    assert [c["subject"] for c in api.get(url, {"limit": "1"}).json()["results"]] == ["rotate keys"]


def test_the_claims_list_refuses_what_it_always_refused(bank, other_bank, token_client):
    api = token_client(bank, scopes="read")
    url = f"/api/v1/banks/{bank.slug}/claims"
    misspelt = api.get(url, {"subjcet": "x"})
    assert misspelt.status_code == 400 and misspelt.json()["error"]["code"] == "invalid_input"
    assert "subjcet" in misspelt.json()["error"]["fields"]
    for limit in ("0", "1001", "ten", ""):
        refused = api.get(url, {"limit": limit})
        assert refused.status_code == 400, limit
        assert refused.json()["error"]["message"] == "limit must be a whole number from 1 to 1000."
    assert api.get(url, {"subject": "  "}).status_code == 400
    assert token_client(other_bank).get(url).status_code == 404
    with pytest.raises(KbError) as refused:  # the admin's and commands' way in
        execute_as(Caller.system(via="command"), ListClaims, bank, query={"limit": 0})
    assert refused.value.code == "invalid_input" and "limit" in refused.value.fields


def test_job_status_is_an_action_visible_to_its_banks_tokens_and_staff(
    bank, other_bank, token_client, admin_client
):
    job = Job.objects.create(bank=bank, kind="import", progress_done=3, progress_total=10)
    url = f"/api/v1/jobs/{job.public_id}"
    rest = token_client(bank, scopes="read").get(url)
    assert rest.status_code == 200
    assert rest.json()["progress"] == {"done": 3, "total": 10, "phase": job.phase}
    assert admin_client.get(url).json() == rest.json()
    answer = JobStatusAction.prepare(Caller.system(via="job"), None, ids={"job_id": job.public_id})
    assert answer.run().data == rest.json()
    for client, job_id in ((token_client(other_bank), job.public_id), (admin_client, "nope")):
        hidden = client.get(f"/api/v1/jobs/{job_id}")
        assert hidden.status_code == 404
        assert hidden.json()["error"]["code"] == "job_not_found"
    assert token_client(other_bank).options(url).status_code == 404
