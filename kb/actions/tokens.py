"""Agent token use cases as actions: create, set the expiry, revoke.

A token belongs to no bank (it holds several), so these actions run without one
(``prepare(caller, None, …)``): the caller is staff (the admin) or the system (a management
command); an agent's token never manages tokens. Each is audited like any write: one
operation per bank the token holds (``create_token``, ``token_expiry``, ``revoke_token``),
naming the token's prefix, with the caller as actor and the request id of the call — so a
bank's history shows who gave or cut its agents' access, and when.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from django.db import transaction
from django.utils import timezone
from rest_framework import serializers

from kb.actions.base import Action, Caller
from kb.errors import Forbidden, NotFound
from kb.models import AgentToken, Bank, OperationKind, Scope
from kb.presenters import iso
from kb.services import tokens as token_service
from kb.unit_of_work import start_operation


def _staff_or_system(caller: Caller) -> None:
    if caller.token is not None or not (
        getattr(caller.user, "is_staff", False) or caller.via in ("job", "command")
    ):
        raise Forbidden("Only staff manage agent tokens.", code="staff_only")


def _future(value):
    if value is not None and value <= timezone.now():
        raise serializers.ValidationError("The expiry must be in the future.")
    return value


def _record(token: AgentToken, kind: str, actor: str, reason: str, **details) -> None:
    """One operation per bank ``token`` holds."""
    for bank in token.banks.order_by("slug"):
        start_operation(
            bank, kind, actor=actor, reason=reason, details={"tokens": [token.prefix], **details}
        )


class TokenAction(Action):
    """An action on tokens: no bank, staff or system callers only."""

    scope = Scope.CURATE
    values_checked_by_service: ClassVar[bool] = False

    @classmethod
    def prepare(cls, caller: Caller, bank=None, *, ids=None, query=None, body=None) -> Action:
        _staff_or_system(caller)
        data = cls.clean(query or {}, body)
        return cls(None, caller, ids=dict(ids or {}), data=data)


class CreateTokenInput(serializers.Serializer):
    name = serializers.CharField(max_length=200, help_text="Who or what uses it.")
    banks = serializers.ListField(
        child=serializers.SlugField(), min_length=1, help_text="The slugs of the banks it holds."
    )
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=Scope.choices), min_length=1
    )
    expires_at = serializers.DateTimeField(
        required=False, allow_null=True, default=None, help_text="null: never expires."
    )

    def validate_expires_at(self, value):
        return _future(value)


@dataclass
class CreatedToken:
    token: AgentToken
    raw: str  # shown once, never stored


class CreateToken(TokenAction):
    """Create a token (the raw secret is returned once and never stored)."""

    name = "tokens.create"
    summary = "Create an agent token"
    Input = CreateTokenInput

    def execute(self) -> CreatedToken:
        slugs = list(dict.fromkeys(self.data["banks"]))
        banks = list(Bank.objects.filter(slug__in=slugs))
        missing = sorted(set(slugs) - {b.slug for b in banks})
        if missing:
            raise NotFound(
                f"No such bank: {', '.join(missing)}.",
                code="bank_not_found",
                fields={"banks": f"Unknown: {', '.join(missing)}."},
            )
        with transaction.atomic():
            token, raw = token_service.create_token(
                self.data["name"],
                banks,
                self.data["scopes"],
                created_by=self.caller.actor,
                expires_at=self.data.get("expires_at"),
            )
            _record(
                token,
                OperationKind.CREATE_TOKEN,
                self.caller.actor,
                f"token {token.name!r} created",
                scopes=token.scopes,
                expires_at=iso(token.expires_at),
            )
        return CreatedToken(token, raw)

    def present(self, result: CreatedToken) -> dict:
        return {"prefix": result.token.prefix, "token": result.raw}


class ExpiryInput(serializers.Serializer):
    expires_at = serializers.DateTimeField(allow_null=True, help_text="null: never expires.")

    def validate_expires_at(self, value):
        return _future(value)


class SetTokenExpiry(TokenAction):
    """Give a token an expiry (or none); a past expiry is refused; no change records nothing."""

    name = "tokens.expiry"
    summary = "Set an agent token's expiry"
    path_ids = {"id": "id"}
    Input = ExpiryInput

    def execute(self) -> AgentToken:
        with transaction.atomic():
            token = AgentToken.objects.select_for_update().filter(pk=self.ids.get("id")).first()
            if token is None:
                raise NotFound("No such token.", code="token_not_found")
            before = token.expires_at
            token_service.set_token_expiry(token, self.data["expires_at"])
            if before != token.expires_at:
                _record(
                    token,
                    OperationKind.TOKEN_EXPIRY,
                    self.caller.actor,
                    f"token {token.name!r} expiry set",
                    expires_at=[iso(before), iso(token.expires_at)],
                )
        return token


class RevokeInput(serializers.Serializer):
    ids = serializers.ListField(child=serializers.IntegerField(), min_length=1)
    reason = serializers.CharField(required=False, allow_blank=True, default="")


class RevokeTokens(TokenAction):
    """Revoke tokens (final: no path clears ``revoked_at``); one ``revoke_token`` operation
    per bank they held (see :func:`kb.services.tokens.revoke_tokens`)."""

    name = "tokens.revoke"
    summary = "Revoke agent tokens"
    Input = RevokeInput

    def execute(self) -> token_service.RevokeResult:
        tokens = AgentToken.objects.filter(pk__in=self.data["ids"])
        return token_service.revoke_tokens(
            tokens, actor=self.caller.actor, reason=self.data.get("reason") or ""
        )
