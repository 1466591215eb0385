"""REST views of claims (API.md "Claims"): list, claim and release run the actions of
:mod:`kb.actions.claims`."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers

from kb.actions.claims import ClaimWork, ListClaims, ReleaseClaim
from kb.api.actions import respond
from kb.api.params import int_query
from kb.api.schemas import NONBLANK_TEXT, ErrorEnvelope
from kb.api.views import ERRORS, BankAPIView


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
        summary=ListClaims.summary,
    )
    def get(self, request, bank: str):
        return respond(ListClaims, request, bank)


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
