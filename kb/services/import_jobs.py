"""Import jobs: a JSON Lines import queued over REST and run by a Celery worker.

The job row says what happened (queued, running with progress, succeeded with the import's
counts, failed with the bad lines); the import itself is :func:`kb.services.bulk.import_bank`.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from kb.errors import InvalidInput, KbError
from kb.inputs import check_string
from kb.models import Bank, Job, JobStatus, OperationKind
from kb.services.bulk import ImportFailed


def queue_import_job(bank: Bank, text: str, actor: str, *, restore_deleted: bool = False) -> Job:
    """Store the file as a job and run it on the task queue after commit (``restore_deleted``
    travels with the task: see :func:`kb.services.bulk.import_bank`)."""
    from kb.tasks import run_import_job as task

    if not text.strip():
        raise InvalidInput("The import body is empty.", code="empty_import")
    check_string(text, "body")  # the file is stored on the job: a raw NUL cannot be
    job = Job.objects.create(
        bank=bank,
        kind="import",
        actor=actor,
        payload=text,
        progress_total=sum(1 for line in text.splitlines() if line.strip()),
    )
    if restore_deleted:
        transaction.on_commit(lambda: task.delay(job.pk, restore_deleted=True))
    else:
        transaction.on_commit(lambda: task.delay(job.pk))
    return job


CONFLICT_MESSAGE = (
    "The file conflicts with rows written meanwhile (a concurrent import or edit); nothing "
    "was written. Import it again."
)

# Where each write phase sits on a job's progress bar: (start, width) as fractions.
WRITE_PHASES = {
    "writing": (0.5, 0.0),
    "writing entries": (0.5, 0.15),
    "writing aliases": (0.65, 0.05),
    "writing edges": (0.7, 0.3),
}


def _run_import(job: Job, reason: str, progress, restore_deleted: bool) -> dict:
    """The job's import through the one import action, as the job's actor."""
    from kb.actions.base import Caller
    from kb.actions.imports import ImportLines

    caller = Caller.system(job.actor or "job:import", via="job")
    body = {"text": job.payload, "restore_deleted": restore_deleted, "reason": reason}
    action = ImportLines.prepare(caller, job.bank, body=body)
    action.progress = progress
    with caller.acting():
        return action.execute()


def run_import_job(job_id: int, restore_deleted: bool = False) -> str:
    """Run a queued import job once (``restore_deleted``: entry lines naming deleted entries
    restore them instead of failing with ``entry_deleted``), recording progress, result, errors and attempts on the
    job. A redelivered job whose import already committed is only marked (see ``job_runs``)."""
    from kb.services.job_runs import attempt_details, committed_operation, job_run

    with job_run(job_id) as job:
        if job is None:
            current = Job.objects.filter(pk=job_id).values_list("status", flat=True).first()
            return current or "missing"
        reason = f"import job {job.public_id}"
        lines = job.progress_total or 1

        def progress(phase: str, done: int, total: int) -> None:
            # Validation is the first half of the bar, the write phases share the second half.
            start, width = WRITE_PHASES.get(phase, (0.0, 0.5))
            share = start + width * (done / total if total else 1.0)
            Job.objects.filter(pk=job.pk).update(
                phase=phase,
                progress_done=min(int(lines * share), lines),
                progress_total=lines,
                result={**attempt_details(job), "phase": phase, "done": done, "total": total},
            )

        try:
            done = committed_operation(job, OperationKind.IMPORT, reason)
            if done is not None:  # the worker was lost after the import committed
                result = {**done.details, "operation": done.pk}
            else:
                result = _run_import(job, reason, progress, restore_deleted)
        except ImportFailed as exc:
            Job.objects.filter(pk=job.pk).update(
                status=JobStatus.FAILED,
                errors=exc.extra.get("errors", []),
                result={"message": exc.message, **attempt_details(job)},
                finished_at=timezone.now(),
            )
            return JobStatus.FAILED
        except IntegrityError as exc:  # a row written meanwhile by another writer
            Job.objects.filter(pk=job.pk).update(
                status=JobStatus.FAILED,
                errors=[{"line": None, "message": CONFLICT_MESSAGE, "code": "conflict"}],
                result={"message": f"{CONFLICT_MESSAGE} ({str(exc).splitlines()[0]})"}
                | attempt_details(job),
                finished_at=timezone.now(),
            )
            return JobStatus.FAILED
        except KbError as exc:
            Job.objects.filter(pk=job.pk).update(
                status=JobStatus.FAILED,
                errors=[{"line": None, "message": exc.message}],
                result=attempt_details(job),
                finished_at=timezone.now(),
            )
            return JobStatus.FAILED
        total = job.progress_total
        Job.objects.filter(pk=job.pk).update(
            status=JobStatus.SUCCEEDED,
            phase="done",
            result={**result, **attempt_details(job)},
            progress_done=total,
            progress_total=total,
            finished_at=timezone.now(),
            payload="",
        )
        return JobStatus.SUCCEEDED
