"""Claims as actions (API.md "Claims"): list the live claims, claim or renew work on a
subject, release a claim."""

from __future__ import annotations

from rest_framework import serializers

from kb.actions.base import Action, Caller
from kb.actions.fields import WholeNumber
from kb.api.errors import ApiError
from kb.api.schemas import NonBlankField
from kb.models import Claim, Scope
from kb.presenters import iso
from kb.services import claims


def claim_json(claim: Claim) -> dict:
    """A claim as API.md shows it (plus ``entry`` when the subject names one, and
    ``released_at`` once it ended)."""
    data = {
        "id": claim.pk,
        "subject": claim.subject,
        "holder": claim.holder,
        "since": iso(claim.since),
        "expires_at": iso(claim.expires_at),
        "note": claim.note,
        "entry": claim.entry.short_id if claim.entry_id and claim.entry else None,
    }
    if claim.released_at is not None:
        data["released_at"] = iso(claim.released_at)
    return data


def claim_caller(caller: Caller) -> claims.ClaimCaller:
    """The caller as the claims service sees it: its token (claims belong to it) and whether
    it may act on others' claims (a ``curate`` token, staff or a system caller — audited
    either way)."""
    if caller.token is not None:
        return claims.ClaimCaller(
            actor=caller.actor,
            token_id=caller.token.pk,
            curator=Scope.CURATE in caller.token.scopes,
        )
    curator = bool(getattr(caller.user, "is_staff", False)) or caller.via in ("job", "command")
    return claims.ClaimCaller(actor=caller.actor, curator=curator)


class ClaimRequestSerializer(serializers.Serializer):
    subject = NonBlankField(help_text="Free text, or an entry id or key.")
    holder = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="Who works on it (defaults to the token's actor).",
    )
    ttl_seconds = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=claims.DEFAULT_TTL_SECONDS,
        min_value=claims.MIN_TTL_SECONDS,
        max_value=claims.MAX_TTL_SECONDS,
    )
    note = serializers.CharField(required=False, allow_blank=True, allow_null=True)


class ReleaseRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True)


class ClaimWork(Action):
    """Claim a subject (201), or renew one's own live claim on it (200); 409 ``claim_held``
    when someone else holds it."""

    name = "claims.claim"
    summary = "Claim work on a subject (201 new, 200 renewed, 409 claim_held)"
    scope = Scope.WRITE
    Input = ClaimRequestSerializer
    values_checked_by_service = True  # the claims service checks subject, ttl and note
    status = 201

    def execute(self) -> Claim:
        holder = self.data.get("holder")
        result = claims.claim(
            self.bank,
            self.data.get("subject"),
            holder if holder is not None else self.caller.actor,
            ttl_seconds=self.data.get("ttl_seconds"),
            note=self.data.get("note"),
            caller=claim_caller(self.caller),
        )
        self.status = 201 if result.created else 200
        return result.claim

    def present(self, claim: Claim) -> dict:
        return claim_json(claim)


class ReleaseClaim(Action):
    """Release a claim (idempotent; only its token or a curator)."""

    name = "claims.release"
    summary = "Release a claim (idempotent; only its token or a curator)"
    scope = Scope.WRITE
    path_ids = {"claim_id": "claim_id"}
    Input = ReleaseRequestSerializer
    values_checked_by_service = True

    def execute(self) -> Claim:
        reason = self.data.get("reason") or ""
        if not isinstance(reason, str):
            raise ApiError(400, "invalid_input", "reason must be a string.", {"reason": "String."})
        return claims.release(
            self.bank, self.ids["claim_id"], reason=reason, caller=claim_caller(self.caller)
        )

    def present(self, claim: Claim) -> dict:
        return claim_json(claim)


class ClaimsQuery(serializers.Serializer):
    # The claims service checks the subject (not blank, its length), as for a claim.
    subject = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="Only claims on this subject.",
    )
    limit = WholeNumber(required=False, default=200, min_value=1, max_value=1000)


class ListClaims(Action):
    """The bank's live claims, oldest first (all, or those on one subject)."""

    name = "claims.list"
    summary = "Live claims of the bank"
    Query = ClaimsQuery

    @classmethod
    def clean(cls, query, body) -> dict:
        from kb.api.params import reject_unknown

        reject_unknown(query, cls.Query().fields)  # a misspelt filter is an error, not "all"
        return super().clean(query, body)

    def execute(self) -> list[Claim]:
        return claims.live_claims(
            self.bank, subject=self.data.get("subject"), limit=self.data["limit"]
        )

    def present(self, found: list[Claim]) -> dict:
        return {"results": [claim_json(c) for c in found]}
