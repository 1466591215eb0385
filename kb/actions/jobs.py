"""A background job's status as an action (``GET /jobs/{id}``): jobs belong to a bank, so the
job names the bank the action runs on; it is visible to staff, system callers and the tokens
that hold its bank, and is 404 ``job_not_found`` to anyone else (never a hint that it
exists)."""

from __future__ import annotations

from kb.actions.base import Action, Caller
from kb.errors import NotFound
from kb.models import Job
from kb.presenters import iso


def job_json(job: Job) -> dict:
    """A job as API.md shows it: status, progress, result and errors, its three clocks."""
    return {
        "id": job.public_id,
        "kind": job.kind,
        "bank": job.bank.slug,
        "status": job.status,
        "progress": {
            "done": job.progress_done,
            "total": job.progress_total,
            "phase": job.phase,
        },
        "result": job.result,
        "errors": job.errors,
        "created_at": iso(job.created_at),
        "started_at": iso(job.started_at),
        "finished_at": iso(job.finished_at),
    }


def visible_job(caller: Caller, job_id: str) -> Job:
    """The job ``job_id`` if ``caller`` may see it: staff and system callers see every job, a
    token the jobs of the banks it holds; else 404 ``job_not_found``."""
    job = Job.objects.select_related("bank").filter(public_id=job_id).first()
    if job is not None:
        if caller.token is not None:
            if caller.token.banks.filter(pk=job.bank_id).exists():
                return job
        elif getattr(caller.user, "is_staff", False) or caller.via in ("job", "command"):
            return job
    raise NotFound(f"No job {job_id!r} is visible to you.", code="job_not_found")


class JobStatusAction(Action):
    """A job's status and progress (imports, extraction runs, embedding backfills)."""

    name = "jobs.status"
    summary = "Job status"
    path_ids = {"job_id": "job_id"}

    @classmethod
    def prepare(cls, caller: Caller, bank=None, *, ids=None, query=None, body=None) -> Action:
        """The job names the bank: ``bank`` is not asked of the caller (a job URL has none)."""
        job = visible_job(caller, str((ids or {}).get("job_id") or ""))
        action = super().prepare(caller, job.bank, ids=ids, query=query, body=body)
        action.job = job
        return action

    def execute(self) -> Job:
        return self.job

    def present(self, job: Job) -> dict:
        return job_json(job)
