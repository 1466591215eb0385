"""REST views of claims (API.md "Claims"): thin — parse, call ``kb.services.claims``, render."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from kb.api.auth import AgentPrincipal, actor_for, bank_for
from kb.api.errors import ApiError
from kb.api.params import int_param, int_query, reject_unknown
from kb.api.render import iso
from kb.api.schemas import NONBLANK_TEXT, ErrorEnvelope, NonBlankField
from kb.api.views import ERRORS, BankAPIView
from kb.models import Claim, Scope
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


def claim_caller(request) -> claims.ClaimCaller:
    """The caller as the claims service sees it: its token (claims belong to it) and whether
    it may act on others' claims (a ``curate`` token, or staff — audited either way)."""
    user = request.user
    if isinstance(user, AgentPrincipal):
        return claims.ClaimCaller(
            actor=user.actor, token_id=user.token.pk, curator=Scope.CURATE in user.token.scopes
        )
    return claims.ClaimCaller(actor=actor_for(request), curator=bool(user and user.is_staff))


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


class ClaimSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    subject = serializers.CharField()
    holder = serializers.CharField()
    since = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    note = serializers.CharField(allow_blank=True)
    entry = serializers.CharField(allow_null=True)
    released_at = serializers.DateTimeField(required=False)


class ClaimListSerializer(serializers.Serializer):
    results = ClaimSerializer(many=True)


class ReleaseRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True)


class ClaimListView(BankAPIView):
    @extend_schema(
        tags=["claims"],
        request=ClaimRequestSerializer,
        responses={
            201: ClaimSerializer,
            200: OpenApiResponse(
                ClaimSerializer, description="Renewed (same holder, by its token or a curator)"
            ),
            409: OpenApiResponse(ErrorEnvelope, description="claim_held: holder, since, expiry"),
            **ERRORS,
            403: OpenApiResponse(
                ErrorEnvelope,
                description="Missing scope, or claim_not_yours: another token's claim",
            ),
        },
        summary="Claim work on a subject (201 new, 200 renewed, 409 claim_held)",
    )
    def post(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.WRITE)
        body = self.json_body(request)
        reject_unknown(body, {"subject", "holder", "ttl_seconds", "note"})
        actor = actor_for(request)
        result = claims.claim(
            bank_obj,
            body.get("subject"),
            body.get("holder") if body.get("holder") is not None else actor,
            ttl_seconds=body.get("ttl_seconds"),
            note=body.get("note"),
            caller=claim_caller(request),
        )
        return Response(claim_json(result.claim), status=201 if result.created else 200)

    @extend_schema(
        tags=["claims"],
        parameters=[
            OpenApiParameter("subject", NONBLANK_TEXT, description="Only claims on this subject."),
            int_query("limit", 200, 1, 1000),
        ],
        responses={200: ClaimListSerializer, **ERRORS},
        summary="Live claims of the bank",
    )
    def get(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        reject_unknown(request.query_params, {"subject", "limit"})
        limit = int_param(request, "limit", 200, 1, 1000)
        subject = request.query_params.get("subject")
        found = claims.live_claims(bank_obj, subject=subject, limit=limit)
        return Response({"results": [claim_json(c) for c in found]})


class ClaimReleaseView(BankAPIView):
    @extend_schema(
        tags=["claims"],
        request=ReleaseRequestSerializer,
        responses={
            200: ClaimSerializer,
            **ERRORS,
            403: OpenApiResponse(
                ErrorEnvelope,
                description="Missing scope, or claim_not_yours: only its token or a curator",
            ),
        },
        summary="Release a claim (idempotent; only its token or a curator)",
    )
    def post(self, request, bank: str, claim_id: str):
        bank_obj = bank_for(request, bank, Scope.WRITE)
        body = self.json_body(request) if request.data else {}
        reject_unknown(body, {"reason"})
        reason = body.get("reason") or ""
        if not isinstance(reason, str):
            raise ApiError(400, "invalid_input", "reason must be a string.", {"reason": "String."})
        released = claims.release(bank_obj, claim_id, reason=reason, caller=claim_caller(request))
        return Response(claim_json(released))
