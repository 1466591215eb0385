from django.core.management.base import CommandError

from kb.management.commands._base import KbCommand
from kb.models import Bank
from kb.services.vector_index import (
    drop_orphan_indexes,
    ensure_bank_vector_indexes,
    index_threshold,
)


class Command(KbCommand):
    help = (
        "Give every bank past KB_BANK_VECTOR_INDEX_AT vectors (or the named banks, with --force"
        " regardless of size) its own HNSW and lexical indexes, built CONCURRENTLY."
    )
    command_name = "vector_indexes"

    def add_arguments(self, parser):
        parser.add_argument("banks", nargs="*", help="Bank slugs (default: every bank).")
        parser.add_argument("--force", action="store_true", help="Build even below the threshold.")
        parser.add_argument(
            "--prune",
            action="store_true",
            help="Also drop the own indexes of banks that no longer exist.",
        )

    def handle_kb(self, *args, **options):
        banks = Bank.objects.all()
        if options["banks"]:
            banks = banks.filter(slug__in=options["banks"])
            missing = set(options["banks"]) - set(banks.values_list("slug", flat=True))
            if missing:
                raise CommandError(f"No bank {', '.join(sorted(missing))}.")
        created = 0
        for bank in banks:
            report = ensure_bank_vector_indexes(bank, force=options["force"])
            created += len(report.created)
            if report.busy:
                self.stdout.write(f"{bank.slug}: another session is building its indexes; left.")
            if report.created:
                self.stdout.write(
                    f"{bank.slug}: built {', '.join(report.created)} in {report.seconds:.1f}s"
                )
        if options["prune"]:
            dropped = drop_orphan_indexes()
            self.stdout.write(f"{len(dropped)} index(es) of deleted banks dropped.")
        self.stdout.write(
            f"{created} index(es) built; threshold {index_threshold():,} vectors per bank."
        )
