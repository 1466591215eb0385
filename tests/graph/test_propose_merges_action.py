""" "Propose merges" is one action that enqueues (``QueueMergeProposals``, returns the job)
and one that runs (``ProposeMerges``): the admin, the command and the task use them, and a
queued job runs once, as who queued it."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from graph import tasks
from graph.actions.curation import QueueMergeProposals
from kb.actions.base import Caller
from kb.actions.staff import execute_as
from kb.errors import InvalidInput
from kb.models import Job, JobStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch):
    calls = []
    monkeypatch.setattr(tasks.propose_merges_task, "delay", lambda pk, **kw: calls.append((pk, kw)))
    return calls


def test_queue_action_returns_the_job_and_enqueues_after_commit(
    bank, queued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = execute_as(
            Caller.system("tester", via="command"), QueueMergeProposals, bank, body={"limit": 5}
        )
    assert queued == []  # nothing before the commit
    for callback in callbacks:
        callback()
    assert queued == [(bank.pk, {"limit": 5, "job_id": job.pk})]
    assert (job.kind, job.status, job.actor) == ("merge_proposals", JobStatus.QUEUED, "tester")


def test_a_refused_limit_queues_nothing(bank, queued):
    with pytest.raises(InvalidInput):
        execute_as(Caller.system(), QueueMergeProposals, bank, body={"limit": 0})
    assert not Job.objects.exists() and queued == []


def test_the_task_runs_the_queued_job_once(bank, queued):
    job = execute_as(Caller.system("staff:ann", via="job"), QueueMergeProposals, bank, body={})
    result = tasks.propose_merges_task(bank.pk, limit=200, job_id=job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 1
    assert result["pending"] == job.result["pending"] == 0
    again = tasks.propose_merges_task(bank.pk, limit=200, job_id=job.pk)
    assert "not run" in again["status"]
    job.refresh_from_db()
    assert job.attempts == 1


def test_command_queues_or_runs_through_the_actions(
    bank, queued, django_capture_on_commit_callbacks
):
    out = io.StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("propose_merges", bank.slug, "--queue", stdout=out)
    job = Job.objects.get(bank=bank)
    assert job.actor == "command:propose_merges" and job.public_id in out.getvalue()
    assert queued == [(bank.pk, {"limit": 200, "job_id": job.pk})]
    out = io.StringIO()
    call_command("propose_merges", bank.slug, stdout=out, stderr=io.StringIO())
    assert out.getvalue().strip()
