"""Long jobs are visible: phase and progress on the job API, the admin jobs page and the CLI,
for imports, embedding, layouts and merge proposals; `import_bank` prints its embedding job."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from kb.models import Entry, EntryEmbedding, Job, JobStatus
from kb.services.bulk import import_bank
from kb.services.job_progress import JobProgress, tracked_job
from kb.services.search import search_entries

pytestmark = pytest.mark.django_db


def _lines(n: int, prefix: str = "visible") -> str:
    return "\n".join(
        json.dumps(
            {
                "type": "entry",
                "key": f"{prefix}:{i}",
                "title": f"Quarantined zephyrine runbook {i}",
                "content": f"Step {i} of draining the zephyrine queue before a failover.",
                "kind": "fact",
            }
        )
        for i in range(n)
    )


def test_rest_import_reports_phase_and_its_embedding_job(
    bank, client_rw, hashing_embedder, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = client_rw.post(
            f"/api/v1/banks/{bank.slug}/import",
            data=_lines(300),
            content_type="application/x-ndjson",
        )
    assert response.status_code == 202
    body = client_rw.get(f"/api/v1/jobs/{response.json()['job']}").json()
    assert body["status"] == "succeeded"
    assert body["progress"] == {"done": 300, "total": 300, "phase": "done"}
    embed = client_rw.get(f"/api/v1/jobs/{body['result']['embedding_job']}").json()
    assert embed["kind"] == "embed" and embed["status"] == "succeeded"
    assert embed["progress"] == {"done": 300, "total": 300, "phase": "done"}
    assert EntryEmbedding.objects.filter(bank=bank).count() == 300


def test_new_entries_are_found_lexically_until_their_vectors_land(bank, hashing_embedder):
    result = import_bank(bank, _lines(40), reason="test", embed=False)
    assert len(result["to_embed"]) == 40
    assert not EntryEmbedding.objects.filter(bank=bank).exists()
    found = search_entries(bank, "zephyrine runbook 17", limit=5, lexical=True)
    assert found.hits, "an entry without vectors must still be found by its words"
    top = found.entries[found.hits[0].entry_id]
    assert top.key == "visible:17"
    assert "lexical" in found.hits[0].matched_by


def test_import_bank_command_prints_the_embedding_job(bank, tmp_path, hashing_embedder):
    path = tmp_path / "bank.jsonl"
    path.write_text(_lines(120))
    out, err = io.StringIO(), io.StringIO()
    call_command("import_bank", bank.slug, str(path), stdout=out, stderr=err)
    text = out.getvalue()
    assert "Imported bank.jsonl into acme: created 120" in text
    job = Job.objects.get(bank=bank, kind="embed")
    assert f"Embedding job {job.public_id}: 120 entries" in text
    # No broker in the tests: the command embeds itself, with a bar, and says so.
    assert "No broker" in text and "embedding" in err.getvalue()
    job.refresh_from_db()
    assert (job.status, job.phase, job.progress_done) == (JobStatus.SUCCEEDED, "done", 120)
    assert EntryEmbedding.objects.filter(bank=bank).count() == 120


def test_jobs_command_lists_and_shows_jobs(bank, other_bank):
    running = Job.objects.create(bank=bank, kind="embed", status=JobStatus.RUNNING)
    JobProgress(running.pk).phase("embedding", total=400, done=100)
    Job.objects.create(bank=other_bank, kind="import", status=JobStatus.SUCCEEDED)
    out = io.StringIO()
    call_command("jobs", stdout=out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    mine = next(line for line in lines if running.public_id in line)
    assert "embedding 100/400 25%" in mine and "running" in mine
    out = io.StringIO()
    call_command("jobs", "--bank", other_bank.slug, stdout=out)
    assert running.public_id not in out.getvalue() and "import" in out.getvalue()
    out = io.StringIO()
    call_command("jobs", running.public_id, stdout=out)
    assert out.getvalue().startswith(running.public_id)


def test_admin_jobs_page_shows_progress_and_refreshes_while_jobs_run(admin_client, bank):
    job = Job.objects.create(bank=bank, kind="layout", status=JobStatus.RUNNING)
    JobProgress(job.pk).phase("laying out", total=8, done=2)
    page = admin_client.get("/admin/jobs/").content.decode()
    assert job.public_id in page and "laying out" in page
    assert '<progress max="100" value="25">' in page
    assert 'http-equiv="refresh"' in page
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED)
    page = admin_client.get("/admin/jobs/").content.decode()
    assert job.public_id in page and 'http-equiv="refresh"' not in page
    page = admin_client.get("/admin/jobs/", {"status": "failed"}).content.decode()
    assert job.public_id not in page


def test_admin_jobs_page_is_for_staff_only(client, bank):
    response = client.get("/admin/jobs/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_layout_refresh_and_merge_proposals_run_as_visible_jobs(bank, make_entry):
    from graph.analytics.layout_store import run_requested
    from graph.tasks import propose_merges_task

    make_entry("Rotate the staging credentials")
    make_entry("Rotate staging credentials")
    run_requested(bank.pk)
    layout = Job.objects.get(bank=bank, kind="layout")
    assert (layout.status, layout.phase) == (JobStatus.SUCCEEDED, "done")
    assert layout.result["nodes"] == 2 and layout.progress_done == layout.progress_total == 1
    propose_merges_task(bank.pk)
    merges = Job.objects.get(bank=bank, kind="merge_proposals")
    assert merges.status == JobStatus.SUCCEEDED and merges.finished_at is not None
    assert isinstance(merges.result, dict) and merges.result


def test_a_failing_tracked_job_is_marked_failed_and_the_error_propagates(bank):
    with pytest.raises(RuntimeError, match="layout engine broke"):
        with tracked_job(bank, "layout") as (_, progress):
            progress.phase("laying out", total=1)
            raise RuntimeError("layout engine broke")
    job = Job.objects.get(bank=bank, kind="layout")
    assert job.status == JobStatus.FAILED and job.phase == "laying out"
    assert job.errors == [{"line": None, "message": "layout engine broke"}]
    assert Entry.objects.filter(bank=bank).count() == 0
