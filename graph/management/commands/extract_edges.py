"""``manage.py extract_edges BANK [--entries ID …] [--extractor local|llm]``: queue edge
proposals read from entries' prose (never writes an edge)."""

from __future__ import annotations

from graph.actions.extraction import ExtractEdges
from graph.ingest.extract import EXTRACTORS
from graph.management.commands.backfill_citations import ProgressBar, bank_by_slug
from kb.actions.base import Caller
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
        caller = Caller.system("command:extract_edges", via="command")
        body = {"entries": options["entries"], "extractor": options["extractor"]}
        action = ExtractEdges.prepare(caller, bank, body=body)  # 400-style errors before a bar
        bar = ProgressBar(f"extract ({options['extractor']})", self.stderr._out)
        try:
            action.progress = bar
            with caller.acting():
                run = action.execute()
        finally:
            bar.close()
        for failure in run.failed:
            self.stderr.write(f"  {failure['entry']}: {failure['message']}")
        self.stdout.write(run.summary())
