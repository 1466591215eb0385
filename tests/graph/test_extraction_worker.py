"""The extraction job on a real Celery worker over Redis (queue of its own), not eagerly."""

from __future__ import annotations

import pytest

from graph.models import EdgeProposal
from kb.models import Entry, EntryKind
from tests.kb.test_celery_worker import celery_worker_process, wait_for  # noqa: F401 (fixture)

pytestmark = [
    pytest.mark.celery_worker,
    pytest.mark.xdist_group("celery_worker"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def test_extraction_job_runs_on_a_real_worker_with_progress(
    celery_worker_process,  # noqa: F811
    bank,
    token_client,
):
    # Given rows written directly (no embedding task: this test is about the extraction job).
    fact = EntryKind.objects.get(bank=None, name="fact")
    for title in ("Sterile Supply Unit", "Theatres Directorate"):
        Entry.objects.create(bank=bank, kind=fact, title=title, content="A team.")
    doc = Entry.objects.create(
        bank=bank,
        kind=fact,
        title="Theatre logistics",
        content="The Sterile Supply Unit is owned by the Theatres Directorate.",
    )
    curator = token_client(bank, scopes="curate")

    response = curator.post(
        f"/api/v1/banks/{bank.slug}/extractions", {"entries": None}, format="json"
    )
    assert response.status_code == 202, response.content
    job_id = response.json()["job"]

    def finished():
        body = curator.get(f"/api/v1/jobs/{job_id}").json()
        return body if body["status"] in ("succeeded", "failed") else None

    body = wait_for(finished)
    assert body is not None, "the extraction job never finished"
    assert body["status"] == "succeeded", body
    assert body["progress"] == {"done": 3, "total": 3, "phase": "done"}
    assert body["result"]["queued"] == 1 and body["result"]["incremental"] is True
    proposal = EdgeProposal.objects.get(bank=bank)
    assert proposal.source_entry_id == doc.pk and proposal.type.name == "owned_by"
    assert celery_worker_process.poll() is None, "the worker died"
