from django.core.management.base import CommandError

from bench.labs.hoplab import B_TEXTS, Crowd, hop_lab
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

        parser.add_argument(
            "--crowd",
            type=int,
            default=0,
            help="Extra noted edges from each A to unrelated entries (crowded mode).",
        )
        parser.add_argument(
            "--crowd-same-share",
            type=float,
            default=0.5,
            help="Share of the crowd edges with the A-B edge's relation and direction.",
        )
        parser.add_argument(
            "--crowd-order",
            choices=["before", "after"],
            default="before",
            help="Write the crowd edges before or after the A-B edge.",
        )
        parser.add_argument(
            "--b-text",
            choices=B_TEXTS,
            default="opaque",
            help="B names only its codename (opaque) or also the system/step it affects (pertinent).",
        )

    def handle_kb(self, *args, **options):
        if not 1 <= options["tasks"] <= 1000:
            raise CommandError("--tasks must be between 1 and 1000.")
        self.stderr.write(
            f"Building {options['tasks']} tasks and embedding them with the configured model…"
        )
        if not 0 <= options["crowd"] <= 200 or not 0 <= options["crowd_same_share"] <= 1:
            raise CommandError("--crowd must be 0..200 and --crowd-same-share 0..1.")
        crowd = Crowd(
            options["crowd"], options["crowd_same_share"], options["crowd_order"], options["b_text"]
        )
        report, slug = hop_lab(
            options["tasks"], seed=options["seed"], keep=options["keep"], crowd=crowd
        )
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
