"""The admin jobs page: every job with its phase and progress, refreshed every few seconds.

A plain list (no script: the page reloads itself with ``<meta http-equiv="refresh">`` while a
job is queued or running), filtered by bank and status from the query string."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import render

from kb.models import Bank, Job, JobStatus

PAGE_SIZE = 100
REFRESH_SECONDS = 2


def job_rows(jobs) -> list[dict]:
    rows = []
    for job in jobs:
        total, done = job.progress_total, job.progress_done
        percent = 100 * min(done, total) // total if total else None
        rows.append({"job": job, "percent": percent})
    return rows


@staff_member_required
def jobs_page(request):
    jobs = Job.objects.select_related("bank").order_by("-created_at")
    bank = (request.GET.get("bank") or "").strip()
    status = (request.GET.get("status") or "").strip()
    if bank:
        jobs = jobs.filter(bank__slug=bank)
    if status in JobStatus.values:
        jobs = jobs.filter(status=status)
    jobs = list(jobs[:PAGE_SIZE])
    active = any(job.status in (JobStatus.QUEUED, JobStatus.RUNNING) for job in jobs)
    return render(
        request,
        "admin/kb/jobs.html",
        {
            **admin.site.each_context(request),
            "title": "Jobs",
            "rows": job_rows(jobs),
            "banks": Bank.objects.order_by("slug").values_list("slug", flat=True),
            "statuses": JobStatus.values,
            "bank": bank,
            "status": status,
            "refresh": REFRESH_SECONDS if active else None,
        },
    )
