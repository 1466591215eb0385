"""``manage.py extract_edges BANK [--entries ID …] [--extractor local|llm]``: queue edge
proposals read from entries' prose (never writes an edge)."""

from __future__ import annotations

from graph.ingest.extract import EXTRACTORS
from graph.ingest.extract.run import extract_edges
from graph.management.commands.backfill_citations import ProgressBar, bank_by_slug
from kb.management.commands._base import KbCommand


class Command(KbCommand):
    help = (
        "Read entries' titles and content, find the relations they state (with the verbatim "
        "span) and queue them as edge proposals for review. Without --entries, reads only the "
        "entries changed since the previous run of the same extractor (per-bank watermark)."
    )
    command_name = "extract_edges"

    def add_arguments(self, parser):
        parser.add_argument("bank", help="Bank slug.")
        parser.add_argument(
            "--entries", nargs="+", metavar="ID", help="Read exactly these entries (ids or keys)."
        )
        parser.add_argument("--extractor", choices=EXTRACTORS, default="local")

    def handle_kb(self, *args, **options):
        bank = bank_by_slug(options["bank"])
        bar = ProgressBar(f"extract ({options['extractor']})", self.stderr._out)
        try:
            run = extract_edges(
                bank, entries=options["entries"], extractor=options["extractor"], progress=bar
            )
        finally:
            bar.close()
        for failure in run.failed:
            self.stderr.write(f"  {failure['entry']}: {failure['message']}")
        self.stdout.write(run.summary())
