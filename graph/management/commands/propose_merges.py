"""``manage.py propose_merges BANK``: queue likely-duplicate pairs for a curator."""

from __future__ import annotations

from django.core.management.base import CommandError

from graph.curation.proposals import propose_merges
from graph.management.commands.backfill_citations import ProgressBar, bank_by_slug
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

    def handle_kb(self, *args, **options):
        if options["limit"] < 1:
            raise CommandError("--limit must be at least 1.")
        bank = bank_by_slug(options["bank"])
        bar = ProgressBar("nearest neighbours", self.stderr._out)
        try:
            run = propose_merges(bank, limit=options["limit"], progress=bar)
        finally:
            bar.close()
        self.stdout.write(run.summary())
