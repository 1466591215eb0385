"""Running a queued job exactly once, whatever the task queue delivers.

Tasks are acknowledged late, so a worker that dies mid-job (SIGKILL, OOM, a lost machine) has
its message delivered again, and a message whose job outlives the broker's visibility timeout
can be delivered twice while the first run still goes on. :func:`job_run` makes both safe: the
run holds a session advisory lock on the job (a second delivery finds it held and leaves the
job alone; a dead worker's lock goes with its connection), and a job found ``running`` with the
lock free was interrupted: the attempt is counted and the job row says so. A job's work is
one audited operation whose reason names the job; a redelivered job first looks for it
(:func:`committed_operation`), so work that committed just before its worker died is not done
twice, and work that did not commit left nothing behind (one transaction).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.utils import timezone

from kb.locks import session_lock
from kb.models import Job, JobStatus, Operation

FINISHED = (JobStatus.SUCCEEDED, JobStatus.FAILED)
_LOCK_NAMESPACE = 0x4A0B  # advisory-lock namespace of job runs (second key: the job id)

INTERRUPTED_NOTE = (
    "An earlier attempt stopped before finishing (its worker was lost); nothing it wrote was "
    "kept, and the job ran again from the start."
)


@contextlib.contextmanager
def job_run(job_id: int) -> Iterator[Job | None]:
    """Yield the job, marked running with its attempt counted, or None when it must not run
    here: missing, already finished, or running under another worker right now."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None or job.status in FINISHED:
        yield None
        return
    with session_lock(_LOCK_NAMESPACE, job_id) as held:
        if not held:
            yield None
            return
        job.refresh_from_db()
        if job.status in FINISHED:
            yield None
            return
        interrupted = job.status == JobStatus.RUNNING
        job.attempts += 1
        job.status = JobStatus.RUNNING
        job.started_at = timezone.now()
        job.result = {"attempts": job.attempts}
        if interrupted:
            job.result["interrupted_attempts"] = job.attempts - 1
            job.result["note"] = INTERRUPTED_NOTE
        job.save(update_fields=["attempts", "status", "started_at", "result"])
        yield job


def committed_operation(job: Job, kind: str, reason: str) -> Operation | None:
    """The operation an earlier attempt of ``job`` committed, if any (only after a loss)."""
    if not (job.result or {}).get("interrupted_attempts"):
        return None
    return Operation.objects.filter(bank_id=job.bank_id, kind=kind, reason=reason).first()


def attempt_details(job: Job) -> dict:
    """What the job row's result says about its attempts (merged into the final result)."""
    keep = ("attempts", "interrupted_attempts", "note")
    return {k: v for k, v in (job.result or {}).items() if k in keep}
