from pathlib import Path

from django.core.management.base import CommandError

from kb.management.commands._base import KbCommand
from kb.services.banks import ensure_bank
from kb.services.bulk import import_bank


class Command(KbCommand):
    help = "Import a JSON Lines file into a bank (created if missing). All or nothing."
    command_name = "import_bank"

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("file")
        parser.add_argument("--reason", default="import")
        parser.add_argument(
            "--restore-deleted",
            action="store_true",
            help="Entry lines naming deleted entries restore them (else each is a line error "
            "entry_deleted).",
        )

    def handle_kb(self, *args, **options):
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"No such file: {path}")
        text = path.read_text(encoding="utf-8")
        bank, _ = ensure_bank(options["slug"])

        with self.phase_progress() as progress:
            result = import_bank(
                bank,
                text,
                reason=options["reason"],
                progress=progress,
                restore_deleted=options["restore_deleted"],
            )
        summary = ", ".join(f"{k} {v}" for k, v in result.items() if k not in ("operation",) and v)
        op = result.get("operation")
        self.stdout.write(
            f"Imported {path.name} into {bank.slug}: {summary or 'nothing changed'}"
            + (f" (operation #{op})." if op else ".")
        )
