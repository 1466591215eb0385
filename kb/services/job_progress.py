"""Phase and progress of a running job, as the job API, the admin jobs page and the CLI show
them, and a job row for work that is not queued as a job (layouts, gap reports, merge
proposals) so that it is visible the same way."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from django.utils import timezone

from kb.models import Job, JobStatus


class JobProgress:
    """Writes ``phase``, ``progress_done`` and ``progress_total`` of one job row: a new phase
    at once, progress inside a phase at most every ``interval`` seconds (and at its end), so a
    tight loop does not turn into a stream of UPDATEs."""

    def __init__(self, job_id: int, interval: float = 0.5):
        self.job_id = job_id
        self.interval = interval
        self.current = ""
        self._written_at = 0.0

    def phase(self, name: str, total: int = 0, done: int = 0) -> None:
        self.current = name
        self._write(done, total)

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done >= total or now - self._written_at >= self.interval:
            self._write(done, total)

    def _write(self, done: int, total: int) -> None:
        self._written_at = time.monotonic()
        Job.objects.filter(pk=self.job_id).update(
            phase=self.current, progress_done=max(0, done), progress_total=max(0, total)
        )


@contextlib.contextmanager
def tracked_job(bank, kind: str, actor: str = "") -> Iterator[tuple[Job, JobProgress]]:
    """A job row for work run by a task that was not queued as a job: created running, marked
    succeeded with ``job.result`` (set it inside the block) when the block ends, or failed with
    the error's text when it raises (the error still propagates)."""
    job = Job.objects.create(
        bank=bank,
        kind=kind,
        actor=actor,
        status=JobStatus.RUNNING,
        started_at=timezone.now(),
        attempts=1,
    )
    job.result = {}
    try:
        yield job, JobProgress(job.pk)
    except Exception as exc:
        Job.objects.filter(pk=job.pk).update(
            status=JobStatus.FAILED,
            errors=[{"line": None, "message": str(exc)[:2000]}],
            finished_at=timezone.now(),
        )
        raise
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.SUCCEEDED, phase="done", result=job.result, finished_at=timezone.now()
    )
