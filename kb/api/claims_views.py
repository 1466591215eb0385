"""REST views of claims (API.md "Claims"): claim and release run the actions of
:mod:`kb.actions.claims`; the list reads ``kb.services.claims``."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from kb.actions.claims import ClaimWork, ReleaseClaim, claim_json
from kb.api.actions import respond
from kb.api.auth import bank_for
from kb.api.params import int_param, int_query, reject_unknown
from kb.api.schemas import NONBLANK_TEXT, ErrorEnvelope
from kb.api.views import ERRORS, BankAPIView
from kb.models import Scope
from kb.services import claims


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


class ClaimListView(BankAPIView):
    @extend_schema(
        tags=["claims"],
        request=ClaimWork.Input,
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
        summary=ClaimWork.summary,
    )
    def post(self, request, bank: str):
        return respond(ClaimWork, request, bank)

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
        request=ReleaseClaim.Input,
        responses={
            200: ClaimSerializer,
            **ERRORS,
            403: OpenApiResponse(
                ErrorEnvelope,
                description="Missing scope, or claim_not_yours: only its token or a curator",
            ),
        },
        summary=ReleaseClaim.summary,
    )
    def post(self, request, bank: str, claim_id: str):
        return respond(ReleaseClaim, request, bank, claim_id=claim_id)
