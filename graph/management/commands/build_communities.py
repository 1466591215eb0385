"""``manage.py build_communities [BANK]``: recompute Louvain communities and summaries."""

from __future__ import annotations

from django.core.management.base import CommandError
from tqdm import tqdm

from graph.analytics.communities import build_communities
from graph.analytics.view_cache import warm_views
from kb.management.commands._base import KbCommand
from kb.models import Bank


class Command(KbCommand):
    help = (
        "Recompute the Louvain communities (fixed seed) of one bank, or of every bank, with "
        "extractive summaries and their vectors; each bank's set is replaced atomically."
    )
    command_name = "build_communities"

    def add_arguments(self, parser):
        parser.add_argument("bank", nargs="?", help="Bank slug (default: every bank).")
        parser.add_argument("--resolution", type=float, default=1.0, help="Louvain resolution.")

    def handle_kb(self, *args, **options):
        banks = Bank.objects.order_by("slug")
        if options["bank"]:
            banks = banks.filter(slug=options["bank"])
            if not banks.exists():
                raise CommandError(f"No such bank: {options['bank']}")
        if options["resolution"] <= 0:
            raise CommandError("--resolution must be positive.")
        total = members = 0
        banks = list(banks)
        with tqdm(banks, desc="banks", unit="bank", file=self.stderr._out) as bar:
            for bank in bar:
                bar.set_postfix_str(bank.slug)
                built = build_communities(bank, resolution=options["resolution"])
                warm_views(bank)  # the explorer's overview and largest communities
                total += built.communities
                members += built.members
        self.stdout.write(
            f"Built {total} communities with {members} members in {len(banks)} bank(s)."
        )
