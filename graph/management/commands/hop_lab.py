from django.core.management.base import CommandError

from bench.labs.hoplab import hop_lab
from kb.management.commands._base import KbCommand


class Command(KbCommand):
    help = "Build a scratch bank of one-hop tasks and report how often the fold hands over the hop."
    command_name = "hop_lab"

    def add_arguments(self, parser):
        parser.add_argument("--tasks", type=int, default=30)
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument(
            "--keep", action="store_true", help="Keep the scratch bank for inspection."
        )

    def handle_kb(self, *args, **options):
        if not 1 <= options["tasks"] <= 1000:
            raise CommandError("--tasks must be between 1 and 1000.")
        self.stderr.write(
            f"Building {options['tasks']} tasks and embedding them with the configured model…"
        )
        report, slug = hop_lab(options["tasks"], seed=options["seed"], keep=options["keep"])
        summary = report.summary()
        width = max(len(k) for k in summary)
        for key, value in summary.items():
            self.stdout.write(f"{key:<{width}}  {value}")
        if report.leaks:
            for leak in report.leaks[:20]:
                self.stdout.write(f"LEAK {leak}")
            raise CommandError(
                f"Leak check failed: {len(report.leaks)} leak(s); the lab's result is void."
            )
        kept = "kept" if options["keep"] else "dropped"
        self.stdout.write(
            f"Hop lab on scratch bank {slug} ({kept}): B reachable in {summary['b_reachable_in_fold_pct']}% "
            f"of {report.kept} hop tasks, 0% with the flat top-8."
        )
