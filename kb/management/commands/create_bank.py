from kb.management.commands._base import KbCommand
from kb.models import BankKind


class Command(KbCommand):
    help = "Create a bank (or leave an existing one as it is)."
    command_name = "create_bank"

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", default=None)
        parser.add_argument("--kind", default=BankKind.GENERAL, choices=BankKind.values)

    def handle_kb(self, *args, **options):
        bank, created = self.ensure_bank(
            options["slug"], name=options["name"], kind=options["kind"]
        )
        self.stdout.write(
            f"{'Created' if created else 'Kept existing'} bank {bank.slug!r} ({bank.kind})."
        )
