"""REST view of the context bundle (API.md "Context bundle"): thin — parse, build, render."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from graph.retrieval.context import MAX_BUDGET, MAX_TASK, MIN_BUDGET, build_context
from kb.api.auth import actor_for, bank_for
from kb.api.openapi import schema_keywords
from kb.api.schemas import NONBLANK, some_list_given
from kb.api.views import ERRORS, BankAPIView
from kb.models import Scope


@schema_keywords(
    anyOf=[
        {
            "type": "object",
            "required": ["task"],
            "properties": {"task": {"type": "string", "pattern": NONBLANK}},
        },
        *some_list_given("files", "symbols"),
    ]
)
class ContextRequestSerializer(serializers.Serializer):
    task = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, max_length=MAX_TASK
    )
    files = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        allow_null=True,
        max_length=200,
    )
    symbols = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        allow_null=True,
        max_length=200,
    )
    budget_tokens = serializers.IntegerField(
        required=False, allow_null=True, default=1500, min_value=MIN_BUDGET, max_value=MAX_BUDGET
    )
    limit = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=6,
        min_value=1,
        max_value=20,
        help_text="Fold results (1–20).",
    )


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
