"""Imports as actions: one declaration of an import (the JSON Lines text, ``restore_deleted``,
a reason) read by the REST view (which queues it as a job), the Celery job and
``manage.py import_bank`` (which run it)."""

from __future__ import annotations

from rest_framework import serializers

from kb.actions.base import Action
from kb.models import Job, Scope
from kb.services import import_jobs
from kb.services.bulk import import_bank

RESTORE_DELETED_DOC = (
    "true: an entry line whose id or key names a deleted entry restores it (audited in the "
    "import operation); false (default): such a line is a line error entry_deleted."
)


class ImportInput(serializers.Serializer):
    text = serializers.CharField(
        allow_blank=True,
        trim_whitespace=False,
        help_text="JSON Lines (UTF-8), one object per line.",
    )
    restore_deleted = serializers.BooleanField(
        required=False, default=False, help_text=RESTORE_DELETED_DOC
    )
    reason = serializers.CharField(required=False, default="import", allow_blank=True)


class QueueImport(Action):
    """Store the file as a job that a worker runs (:class:`ImportLines`) after commit."""

    name = "imports.queue"
    summary = "Import JSON Lines as a background job"
    scope = Scope.CURATE
    Input = ImportInput
    values_checked_by_service = True  # empty_import, invalid_string: the service's codes
    status = 202

    def execute(self) -> Job:
        return import_jobs.queue_import_job(
            self.bank,
            self.data["text"],
            self.caller.actor,
            restore_deleted=bool(self.data.get("restore_deleted")),
        )

    def present(self, job: Job) -> dict:
        return {"job": job.public_id}


class ImportLines(Action):
    """Validate the whole file, then write it in one import operation (all or nothing): the
    counts of :func:`kb.services.bulk.import_bank`. ``progress`` (phase, done, total) and
    ``embed`` are the runner's (a job's progress bar, a command that embeds on its own)."""

    name = "imports.run"
    summary = ""  # no REST operation: REST queues (QueueImport), a job or command runs it
    scope = Scope.CURATE
    Input = ImportInput
    values_checked_by_service = True  # the whole file is validated by import_bank
    progress = None
    embed = True

    def execute(self) -> dict:
        return import_bank(
            self.bank,
            self.data["text"],
            actor=self.caller.actor,
            reason=self.data.get("reason") or "import",
            progress=self.progress,
            embed=self.embed,
            restore_deleted=bool(self.data.get("restore_deleted")),
        )
