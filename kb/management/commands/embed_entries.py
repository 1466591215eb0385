from django.core.management.base import CommandError
from django.db.models import F, Q
from tqdm import tqdm

from kb.management.commands._base import KbCommand
from kb.models import Bank, Entry, EntryStatus
from kb.services.embedding import embed_entries, get_embedder


class Command(KbCommand):
    help = "Compute missing or stale embeddings (all entries with --all)."
    command_name = "embed_entries"

    def add_arguments(self, parser):
        parser.add_argument("--bank", default=None)
        parser.add_argument("--all", action="store_true", help="Recompute even up-to-date vectors.")
        parser.add_argument("--batch", type=int, default=256)

    def handle_kb(self, *args, **options):
        entries = Entry.objects.exclude(status__in=[EntryStatus.DELETED, EntryStatus.MERGED])
        if options["bank"]:
            bank = Bank.objects.filter(slug=options["bank"]).first()
            if bank is None:
                raise CommandError(f"No such bank: {options['bank']}")
            entries = entries.filter(bank=bank)
        if not options["all"]:
            entries = entries.filter(
                Q(embedding__isnull=True) | Q(updated_at__gt=F("embedding__computed_at"))
            )
        ids = list(entries.order_by("pk").values_list("pk", flat=True).distinct())
        embedder = get_embedder()
        written = 0
        with tqdm(total=len(ids), desc="embedding", unit="entry", file=self.stderr._out) as bar:
            for start in range(0, len(ids), options["batch"]):
                chunk = list(Entry.objects.filter(pk__in=ids[start : start + options["batch"]]))
                written += embed_entries(chunk, force=options["all"], embedder=embedder)
                bar.update(len(chunk))
        self.stdout.write(f"Embedded {written} of {len(ids)} entries with {embedder.name}.")
