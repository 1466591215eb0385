"""Shared plumbing for management commands: audit attribution and clear errors."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from kb import audit
from kb.errors import KbError


class KbCommand(BaseCommand):
    """Runs ``handle_kb`` as ``command:<name>`` and turns service errors into CommandError."""

    command_name = "command"

    def handle(self, *args, **options):
        try:
            with audit.acting_as(f"command:{self.command_name}"):
                return self.handle_kb(*args, **options)
        except KbError as exc:
            extra = exc.extra.get("errors") or []
            lines = "\n".join(f"  line {e['line']}: {e['message']}" for e in extra[:50])
            raise CommandError(f"{exc.message}\n{lines}".rstrip()) from exc

    def handle_kb(self, *args, **options):  # pragma: no cover - abstract
        raise NotImplementedError
