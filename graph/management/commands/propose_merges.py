"""``manage.py propose_merges BANK``: queue likely-duplicate pairs for a curator."""

from __future__ import annotations

from django.core.management.base import CommandError

from graph.actions.curation import ProposeMerges, QueueMergeProposals
from graph.management.commands.backfill_citations import ProgressBar, bank_by_slug
from kb.actions.base import Caller
from kb.actions.staff import execute_prepared, prepare_as
from kb.management.commands._base import KbCommand


class Command(KbCommand):
    help = (
        "Find likely duplicate entries (title-token and nearest-embedding blocking, scored by "
        "cosine, name similarity and shared neighbours) and write merge proposals: pending "
        "for likely duplicates, unclear for the abstention band. Never merges."
    )
    command_name = "propose_merges"

    def add_arguments(self, parser):
        parser.add_argument("bank", help="Bank slug.")
        parser.add_argument(
            "--limit", type=int, default=200, help="At most this many new proposals."
        )
        parser.add_argument(
            "--queue",
            action="store_true",
            help="Queue it as a background job (prints the job id) instead of running it here.",
        )

    def handle_kb(self, *args, **options):
        if options["limit"] < 1:
            raise CommandError("--limit must be at least 1.")
        bank = bank_by_slug(options["bank"])
        body = {"limit": options["limit"]}
        if options["queue"]:
            job = self.run_action(QueueMergeProposals, bank, body=body)
            self.stdout.write(f"Queued job {job.public_id} ({job.kind}) for {bank.slug}.")
            return
        caller = Caller.system(f"command:{self.command_name}", via="command")
        action = prepare_as(caller, ProposeMerges, bank, body=body)
        action.progress = ProgressBar("nearest neighbours", self.stderr._out)
        try:
            run = execute_prepared(action)
        finally:
            action.progress.close()
        self.stdout.write(run.summary())
