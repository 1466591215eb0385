"""REST view of the context bundle (API.md "Context bundle"): thin — parse, build, render."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from graph.retrieval.context import build_context
from kb.api.auth import actor_for, bank_for
from kb.api.views import ERRORS, BankAPIView
from kb.models import Scope


class ContextRequestSerializer(serializers.Serializer):
    task = serializers.CharField(required=False, allow_blank=True)
    files = serializers.ListField(child=serializers.CharField(), required=False)
    symbols = serializers.ListField(child=serializers.CharField(), required=False)
    budget_tokens = serializers.IntegerField(required=False, default=1500)
    limit = serializers.IntegerField(required=False, default=6, help_text="Fold results (1–20).")


class ContextResponseSerializer(serializers.Serializer):
    text = serializers.CharField()
    tokens = serializers.IntegerField()
    entries = serializers.ListField(child=serializers.CharField())
    truncated = serializers.BooleanField()


class ContextView(BankAPIView):
    @extend_schema(
        tags=["context"],
        request=ContextRequestSerializer,
        responses={200: ContextResponseSerializer, **ERRORS},
        summary="Prompt-ready context for a task within a token budget",
    )
    def post(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        bundle = build_context(bank_obj, self.json_body(request), actor=actor_for(request))
        return Response(bundle.as_dict())
