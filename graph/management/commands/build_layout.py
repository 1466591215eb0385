"""``manage.py build_layout [BANK]``: recompute the cached layout of the graph explorer."""

from __future__ import annotations

from django.core.management.base import CommandError
from tqdm import tqdm

from graph.analytics.layout_store import refresh_layout
from graph.analytics.view_cache import warm_views
from kb.management.commands._base import KbCommand
from kb.models import Bank


class Command(KbCommand):
    help = (
        "Recompute the server-side layout (3D and 2D positions, clusters) of one bank, or of "
        "every bank, and replace its cached row: what the refresh job does, run now."
    )
    command_name = "build_layout"

    def add_arguments(self, parser):
        parser.add_argument("bank", nargs="?", help="Bank slug (default: every bank).")

    def handle_kb(self, *args, **options):
        banks = Bank.objects.order_by("slug")
        if options["bank"]:
            banks = banks.filter(slug=options["bank"])
            if not banks.exists():
                raise CommandError(f"No such bank: {options['bank']}")
        nodes = took = 0.0
        banks = list(banks)
        with tqdm(banks, desc="banks", unit="bank", file=self.stderr._out) as bar:
            for bank in bar:
                bar.set_postfix_str(bank.slug)
                built = refresh_layout(bank)
                warm_views(bank)  # the explorer's overview and largest communities
                nodes += built.nodes
                took += built.took_ms
        self.stdout.write(
            f"Laid out {len(banks)} bank(s), {int(nodes)} entries in {took / 1000:.1f} s."
        )
