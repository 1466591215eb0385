import sys

from django.core.management.base import CommandError

from kb.management.commands._base import KbCommand
from kb.models import Bank
from kb.services.bulk import export_lines


class Command(KbCommand):
    help = "Write a bank as JSON Lines (the import format) to stdout or a file."
    command_name = "export_bank"

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("-o", "--output", default=None)

    def handle_kb(self, *args, **options):
        bank = Bank.objects.filter(slug=options["slug"]).first()
        if bank is None:
            raise CommandError(f"No such bank: {options['slug']}")
        out = open(options["output"], "w", encoding="utf-8") if options["output"] else sys.stdout  # noqa: SIM115
        count = 0
        try:
            for line in export_lines(bank):
                out.write(line + "\n")
                count += 1
        finally:
            if out is not sys.stdout:
                out.close()
        if options["output"]:
            self.stderr.write(f"Wrote {count} lines of bank {bank.slug} to {options['output']}.")
