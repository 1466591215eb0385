"""Shared plumbing for management commands: audit attribution and clear errors."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

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

    def run_action(self, action_class, bank, **kwargs):
        """Execute ``action_class`` on ``bank`` (None: an action without a bank) as this
        command (a system caller through ``command``): the same declaration and checks as
        REST, MCP and the admin; a refused input is a ``CommandError``."""
        from kb.actions.base import Caller
        from kb.actions.staff import execute_as

        caller = Caller.system(f"command:{self.command_name}", via="command")
        return execute_as(caller, action_class, bank, **kwargs)

    def ensure_bank(self, slug: str, *, name: str | None = None, kind: str = "general"):
        """The bank ``slug``, created by the ``SaveBank`` action when missing (one
        ``configure`` operation, this command as actor); an existing bank is left as it is.
        Returns ``(bank, created)``."""
        from kb.actions.banks import SaveBank
        from kb.models import Bank

        bank = Bank.objects.filter(slug=slug).first()
        if bank is not None:
            return bank, False
        body = {"slug": slug, "name": name or slug.replace("-", " ").title(), "kind": kind}
        bank, _op = self.run_action(SaveBank, None, body=body)
        return bank, True

    def handle_kb(self, *args, **options):  # pragma: no cover - abstract
        raise NotImplementedError

    @contextlib.contextmanager
    def phase_progress(self, unit: str = "line") -> Iterator[Callable[[str, int, int], None]]:
        """A ``progress(phase, done, total)`` callback drawing one tqdm bar per phase."""
        bars: dict[str, tqdm] = {}

        def progress(phase: str, done: int, total: int) -> None:
            bar = bars.get(phase)
            if bar is None:
                bar = bars[phase] = tqdm(
                    total=total, desc=phase, unit=unit, file=self.stderr._out, leave=False
                )
            bar.update(done - bar.n)

        try:
            yield progress
        finally:
            for bar in bars.values():
                bar.close()
