from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError
from tqdm import tqdm

from kb.actions.base import Caller
from kb.actions.imports import ImportLines
from kb.management.commands._base import KbCommand
from kb.management.jobs_cli import follow_job
from kb.services.embedding import create_embedding_job, run_embedding_job


class Command(KbCommand):
    help = (
        "Import a JSON Lines file into a bank (created if missing). All or nothing. Returns once "
        "the data is committed and prints the embedding job's id (the new entries are found "
        "lexically until their vectors land); --wait follows the embedding to its end."
    )
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
        parser.add_argument(
            "--wait", action="store_true", help="Wait for the embedding job, with a progress bar."
        )

    def handle_kb(self, *args, **options):
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"No such file: {path}")
        text = path.read_text(encoding="utf-8")
        bank, _ = self.ensure_bank(options["slug"])

        caller = Caller.system("command:import_bank", via="command")
        body = {
            "text": text,
            "restore_deleted": options["restore_deleted"],
            "reason": options["reason"],
        }
        action = ImportLines.prepare(caller, bank, body=body)
        action.embed = False  # embedded below, with its own job and bar
        with self.phase_progress() as progress, caller.acting():
            action.progress = progress
            result = action.execute()
        to_embed = result.pop("to_embed", [])
        summary = ", ".join(f"{k} {v}" for k, v in result.items() if k not in ("operation",) and v)
        op = result.get("operation")
        self.stdout.write(
            f"Imported {path.name} into {bank.slug}: {summary or 'nothing changed'}"
            + (f" (operation #{op})." if op else ".")
        )
        if to_embed:
            self._embed(bank, to_embed, wait=options["wait"])

    def _embed(self, bank, entry_ids: list[int], *, wait: bool) -> None:
        from kb.services.vector_index import banks_needing_indexes
        from kb.tasks import embed_entries_task, ensure_bank_vector_indexes_task

        job = create_embedding_job(bank, entry_ids, "command:import_bank")
        self.stdout.write(
            f"Embedding job {job.public_id}: {len(entry_ids)} entries (found lexically until "
            "their vectors land)."
        )
        if settings.CELERY_TASK_ALWAYS_EAGER:
            # No broker, so no worker: the vectors are computed here, with a bar.
            self.stdout.write(
                "No broker (CELERY_BROKER_URL unset): embedding in this command. Against the "
                "system of `make run`, export its CELERY_BROKER_URL and this returns at once."
            )
            bar = tqdm(total=len(entry_ids), desc="embedding", unit="entry", file=self.stderr._out)
            run_embedding_job(entry_ids, job.pk, on_progress=lambda d, t: bar.update(d - bar.n))
            bar.close()
            for bank_id in banks_needing_indexes({bank.pk}):
                ensure_bank_vector_indexes_task.delay(bank_id)
            self.stdout.write(f"Embedding job {job.public_id} succeeded.")
            return
        embed_entries_task.delay(list(entry_ids), job.pk)
        if not wait:
            self.stdout.write(f"Follow it with: manage.py jobs {job.public_id} --wait")
            return
        job = follow_job(job.public_id, self.stderr._out)
        self.stdout.write(f"Embedding job {job.public_id} {job.status}: {job.result}")
        if job.status != "succeeded":
            raise CommandError(f"Embedding job {job.public_id} failed: {job.errors}")
