"""``manage.py parse_headers BANK``: typed edges from entries' ``Related:`` header lines."""

from __future__ import annotations

from graph.ingest.headers import backfill_headers
from graph.management.commands.backfill_citations import ProgressBar, bank_by_slug
from kb.management.commands._base import KbCommand


class Command(KbCommand):
    help = (
        "Parse every 'Related:' line of the bank's entries into typed edges (source phrase in "
        "the evidence; the comma rule applies). Idempotent: a re-run writes nothing."
    )
    command_name = "parse_headers"

    def add_arguments(self, parser):
        parser.add_argument("bank", help="Bank slug.")

    def handle_kb(self, *args, **options):
        bank = bank_by_slug(options["bank"])
        bar = ProgressBar("headers", self.stderr._out)
        try:
            result = backfill_headers(bank, progress=bar)
        finally:
            bar.close()
        if result.unresolved:
            self.stdout.write("Unresolved references: " + ", ".join(result.unresolved[:50]))
        self.stdout.write(result.summary())
