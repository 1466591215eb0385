from django.core.management.base import CommandError
from tqdm import tqdm

from bench.labs.replay import replay
from kb.management.commands._base import KbCommand
from kb.models import Bank


class Command(KbCommand):
    help = "Replay logged queries with fold on and off; print what folding gained and cost."
    command_name = "fold_replay"

    def add_arguments(self, parser):
        parser.add_argument("bank")
        parser.add_argument("--days", type=int, default=7)
        parser.add_argument("--limit", type=int, default=None, help="At most this many queries.")

    def handle_kb(self, *args, **options):
        bank = Bank.objects.filter(slug=options["bank"]).first()
        if bank is None:
            raise CommandError(f"No such bank: {options['bank']}")
        bar = tqdm(desc="replaying", unit="query", file=self.stderr._out)

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        try:
            report = replay(bank, days=options["days"], limit=options["limit"], progress=progress)
        finally:
            bar.close()
        summary = report.summary()
        width = max(len(k) for k in summary)
        for key, value in summary.items():
            self.stdout.write(f"{key:<{width}}  {value}")
        for query, ids in report.lost[:20]:
            self.stdout.write(f"LOST {ids} for query {query!r}")
        if report.lost:
            raise CommandError(
                f"{summary['entries_lost']} flat top-k entries were missing from fold payloads."
            )
        self.stdout.write(f"Replayed {report.queries} queries of {bank.slug}: nothing lost.")
