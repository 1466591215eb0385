"""``manage.py backfill_citations BANK``: cites edges from ids named in text, plus metadata links."""

from __future__ import annotations

from django.core.management.base import CommandError
from tqdm import tqdm

from graph.ingest.backfill import backfill_citations, backfill_metadata
from kb.management.commands._base import KbCommand
from kb.models import Bank


def bank_by_slug(slug: str) -> Bank:
    bank = Bank.objects.filter(slug=slug).first()
    if bank is None:
        raise CommandError(f"No such bank: {slug}")
    return bank


class ProgressBar:
    """A tqdm bar fed by a service's ``progress(done, total)`` callback."""

    def __init__(self, desc: str, out):
        self.bar = tqdm(total=0, desc=desc, unit="entry", file=out, leave=False)

    def __call__(self, done: int, total: int) -> None:
        self.bar.total = total
        self.bar.update(done - self.bar.n)
        if done == total:
            self.bar.refresh()  # the last step always shows, however fast the run was

    def close(self) -> None:
        self.bar.close()


class Command(KbCommand):
    help = (
        "Write a cites edge for every entry id named in another entry's text (citing sentence "
        "as the note), then typed edges for metadata links (supersedes, split_from, …). "
        "Idempotent: a re-run writes nothing."
    )
    command_name = "backfill_citations"

    def add_arguments(self, parser):
        parser.add_argument("bank", help="Bank slug.")
        parser.add_argument(
            "--skip-metadata", action="store_true", help="Only the citations in text."
        )

    def handle_kb(self, *args, **options):
        bank = bank_by_slug(options["bank"])
        results = []
        runs = [("citations", backfill_citations)]
        if not options["skip_metadata"]:
            runs.append(("metadata", backfill_metadata))
        for name, run in runs:
            bar = ProgressBar(name, self.stderr._out)
            try:
                results.append(run(bank, progress=bar))
            finally:
                bar.close()
        for result in results:
            if result.unresolved:
                shown = ", ".join(result.unresolved[:20])
                more = (
                    f" (+{len(result.unresolved) - 20} more)" if len(result.unresolved) > 20 else ""
                )
                self.stdout.write(f"Unresolved {result.kind} references: {shown}{more}")
        self.stdout.write(" ".join(r.summary() for r in results))
