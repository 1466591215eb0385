"""``manage.py import_debian BANK``: the Debian package index (``apt-cache dumpavail``) as a bank."""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import CommandError

from graph.ingest.debian import import_debian
from kb.management.commands._base import KbCommand


class Command(KbCommand):
    help = (
        "Import the package index of this machine's apt sources (or --file, a dumpavail text) "
        "into BANK (created if missing): packages, maintainers and sections as entries; "
        "Depends, Replaces, Conflicts/Breaks, Maintainer and Section as edges; Provides as "
        "aliases. All or nothing; a re-import changes nothing."
    )
    command_name = "import_debian"

    def add_arguments(self, parser):
        parser.add_argument("bank", help="Bank slug.")
        parser.add_argument("--limit", type=int, default=None, help="At most N packages.")
        parser.add_argument(
            "--packages", default="", help="Comma-separated package names to import."
        )
        parser.add_argument(
            "--closure",
            action="store_true",
            help="With --packages: add their Depends/Pre-Depends closure.",
        )
        parser.add_argument("--file", default=None, help="Read this dumpavail text instead.")

    def handle_kb(self, *args, **options):
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError("--limit must be at least 1.")
        roots = [p.strip() for p in options["packages"].split(",") if p.strip()] or None
        if options["closure"] and not roots:
            raise CommandError("--closure needs --packages.")
        text = None
        if options["file"]:
            path = Path(options["file"])
            if not path.is_file():
                raise CommandError(f"No such file: {path}")
            text = path.read_text(encoding="utf-8")
        bank, _ = self.ensure_bank(options["bank"])

        started = time.perf_counter()
        with self.phase_progress() as progress:
            result = import_debian(
                bank,
                text=text,
                limit=options["limit"],
                roots=roots,
                closure=options["closure"],
                progress=progress,
            )
        if not result["packages"]:
            raise CommandError("No package of the index matched.")
        converted = result["converted"]
        op = result.get("operation")
        self.stdout.write(
            f"Imported {converted['packages']} packages, {converted['maintainers']} maintainers, "
            f"{converted['sections']} sections, {converted['edges']} edges and "
            f"{converted['aliases']} aliases into {bank.slug} in "
            f"{time.perf_counter() - started:.1f}s: created {result.get('created', 0)}, "
            f"updated {result.get('updated', 0)}, edges created {result.get('edges_created', 0)}"
            + (f" (operation #{op})." if op else "; nothing changed.")
        )
