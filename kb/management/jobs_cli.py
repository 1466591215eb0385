"""Jobs on the command line: one line per job, and following a job with a progress bar."""

from __future__ import annotations

import time

from tqdm import tqdm

from kb.models import Job, JobStatus

FINISHED = (JobStatus.SUCCEEDED, JobStatus.FAILED)


def job_line(job: Job) -> str:
    done, total = job.progress_done, job.progress_total
    share = f" {100 * done // total}%" if total else ""
    phase = f" {job.phase}" if job.phase else ""
    return (
        f"{job.public_id}  {job.kind:<16} {job.bank.slug:<16} {job.status:<9}"
        f"{phase} {done}/{total}{share}  {job.created_at:%Y-%m-%d %H:%M:%S}"
    )


def follow_job(public_id: str, out, *, poll: float = 0.5) -> Job:
    """Poll the job until it finishes, drawing one bar per phase on ``out``; returns it."""
    bar: tqdm | None = None
    phase = None
    while True:
        job = Job.objects.select_related("bank").get(public_id=public_id)
        if job.phase != phase and job.status not in FINISHED:
            if bar is not None:
                bar.close()
            phase = job.phase
            bar = tqdm(total=job.progress_total or None, desc=phase or job.status, file=out)
        if bar is not None:
            if job.progress_total and bar.total != job.progress_total:
                bar.total = job.progress_total
            bar.update(job.progress_done - bar.n)
        if job.status in FINISHED:
            if bar is not None:
                bar.set_description(job.phase or job.status)  # "done" (a fast job may skip
                bar.close()  # a phase between two polls), or the phase a failure stopped in
            return job
        time.sleep(poll)
