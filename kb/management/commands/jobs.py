from django.core.management.base import BaseCommand, CommandError

from kb.management.jobs_cli import follow_job, job_line
from kb.models import Job, JobStatus


class Command(BaseCommand):
    help = (
        "List recent jobs (imports, embedding, layouts, extraction, gap reports, merge "
        "proposals) with phase and progress, or show one job; --wait follows it with a bar."
    )

    def add_arguments(self, parser):
        parser.add_argument("job", nargs="?", help="A job id: show (or follow) this job.")
        parser.add_argument("--bank", help="Only this bank's jobs.")
        parser.add_argument("--limit", type=int, default=20)
        parser.add_argument("--wait", action="store_true", help="Follow the job until it ends.")

    def handle(self, *args, **options):
        if options["job"]:
            return self._one(options["job"], options["wait"])
        jobs = Job.objects.select_related("bank").order_by("-created_at")
        if options["bank"]:
            jobs = jobs.filter(bank__slug=options["bank"])
        for job in jobs[: max(1, options["limit"])]:
            self.stdout.write(job_line(job))

    def _one(self, public_id: str, wait: bool) -> None:
        job = Job.objects.select_related("bank").filter(public_id=public_id).first()
        if job is None:
            raise CommandError(f"No job {public_id!r}.")
        if wait:
            job = follow_job(public_id, self.stderr._out)
        self.stdout.write(job_line(job))
        if job.result:
            self.stdout.write(f"result: {job.result}")
        for error in job.errors[:20]:
            where = f"line {error['line']}: " if error.get("line") is not None else ""
            self.stdout.write(f"error: {where}{error.get('message')}")
        if wait and job.status == JobStatus.FAILED:
            raise CommandError(f"Job {public_id} failed.")
