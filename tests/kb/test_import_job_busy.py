"""An import task handed back while its job is still held elsewhere (the cancelled run's
database session can outlive its worker, keeping the job's lock until its statement ends)
is retried later, never dropped; once the job is free it runs."""

from __future__ import annotations

import pytest
from celery.exceptions import Retry

from kb.models import Entry, Job, JobStatus
from kb.services.import_jobs import queue_import_job
from kb.services.job_runs import _LOCK_NAMESPACE
from kb.tasks import run_import_job
from tests.pg_activity import holding_advisory_lock

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

LINES = "\n".join(
    f'{{"type": "entry", "key": "busy:{i}", "title": "Busy fact {i}", '
    f'"content": "Line {i}.", "kind": "fact"}}'
    for i in range(3)
)


def test_a_job_held_elsewhere_is_retried_then_runs(
    bank, settings, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):  # the test delivers the task
        job = queue_import_job(bank, LINES, actor="agent:test")
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, attempts=1)
    with holding_advisory_lock(_LOCK_NAMESPACE, job.pk):  # the cancelled run's session
        with pytest.raises(Retry):
            run_import_job(job.pk)  # as a worker delivers it: not eager
        job.refresh_from_db()
        assert (job.status, job.attempts) == ("running", 1)  # left alone, not dropped
    # the session ended: its lock went with it
    assert run_import_job(job.pk) == JobStatus.SUCCEEDED
    job.refresh_from_db()
    assert job.attempts == 2 and job.result["interrupted_attempts"] == 1
    assert Entry.objects.filter(bank=bank, key__startswith="busy:").count() == 3
