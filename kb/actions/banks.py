"""Bank use cases as actions: archive or restore a bank (one audited operation)."""

from __future__ import annotations

from rest_framework import serializers

from kb.actions.base import Action
from kb.models import Operation, Scope
from kb.services import banks


class ArchiveInput(serializers.Serializer):
    archived = serializers.BooleanField(help_text="true archives the bank, false restores it.")
    reason = serializers.CharField(required=False, allow_blank=True, default="")


class ArchiveBank(Action):
    """Archive a bank (out of the bank lists; every row and token kept) or restore it; an
    archived bank archived again changes nothing (the answer is None)."""

    name = "banks.archive"
    summary = "Archive or restore a bank"
    scope = Scope.CURATE
    Input = ArchiveInput

    def execute(self) -> Operation | None:
        return banks.set_archived(
            self.bank,
            self.data["archived"],
            reason=self.data.get("reason") or "",
            actor=self.caller.actor,
        )
