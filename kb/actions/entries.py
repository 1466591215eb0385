"""Entry use cases kb owns whole."""

from __future__ import annotations

from rest_framework import serializers

from kb.actions.base import Action
from kb.api.render import entry_detail
from kb.models import Scope
from kb.services.entries import find_entry, verify_entry

ENTRY_ID = {"id": "entry_id"}


class VerifyInput(serializers.Serializer):
    note = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        help_text="What you checked (kept as the verification's reason).",
    )


class VerifyEntry(Action):
    """Confirm an entry still holds: moves ``verified_at`` only."""

    name = "entries.verify"
    summary = "Confirm an entry still holds (moves verified_at)"
    scope = Scope.WRITE
    path_ids = ENTRY_ID
    Input = VerifyInput

    def execute(self):
        entry = find_entry(self.bank, self.ids["id"])
        return verify_entry(self.bank, entry, actor=self.caller.actor, note=self.data["note"])

    def present(self, entry) -> dict:
        return entry_detail(find_entry(self.bank, entry.short_id))
