"""Bank use cases as actions: archive or restore a bank, create or change a bank's row or its
entry kinds (each one audited operation)."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.validators import UniqueValidator

from kb.actions.base import Action
from kb.actions.config_rows import DeleteConfigRow, SaveConfigRow
from kb.models import Bank, EntryKind, Operation, Scope
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


# --- a bank's own row, and its entry kinds (configuration, one ``configure`` operation) ------


class BankInput(serializers.ModelSerializer):
    """A bank's row: slug (fixed once created), name, kind and per-bank tuning."""

    slug = serializers.RegexField(
        r"^[a-z0-9][a-z0-9-]{0,63}$",
        help_text="Lowercase letters, digits and '-' (at most 64).",
        validators=[UniqueValidator(queryset=Bank.objects.all())],
    )
    settings = serializers.DictField(
        required=False, help_text="Per-bank tuning: a JSON object (see the Bank model)."
    )

    class Meta:
        model = Bank
        fields = ("slug", "name", "kind", "settings")

    def validate_slug(self, value):
        if self.instance is not None and value != self.instance.slug:
            raise serializers.ValidationError("A bank's slug is fixed once it is created.")
        return value


class SaveBank(SaveConfigRow):
    """Create a bank (its first operation records it) or change its name, kind or tuning."""

    name = "banks.save"
    summary = "Create or change a bank"
    model = Bank
    bank_field = None
    Input = BankInput


class EntryKindInput(serializers.ModelSerializer):
    """An entry kind of a bank's vocabulary (no bank: a core kind, superusers only)."""

    bank = serializers.SlugRelatedField(
        slug_field="slug", queryset=Bank.objects.all(), allow_null=True, required=False
    )

    class Meta:
        model = EntryKind
        fields = ("bank", "name", "weight", "container", "structural", "entity", "description")


class SaveEntryKind(SaveConfigRow):
    """Create or change an entry kind (a bank's own, or a core one by a superuser)."""

    name = "kinds.save"
    summary = "Create or change an entry kind"
    model = EntryKind
    Input = EntryKindInput


class DeleteEntryKind(DeleteConfigRow):
    """Delete an entry kind no entry uses (409 ``in_use`` otherwise)."""

    name = "kinds.delete"
    summary = "Delete an unused entry kind"
    model = EntryKind
