"""REST view of the context bundle (API.md "Context bundle"): the :class:`GetContext` action."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from graph.actions.lookup import GetContext
from kb.api.actions import respond
from kb.api.views import ERRORS, BankAPIView


class ContextResponseSerializer(serializers.Serializer):
    text = serializers.CharField()
    tokens = serializers.IntegerField()
    entries = serializers.ListField(child=serializers.CharField())
    truncated = serializers.BooleanField()


class ContextView(BankAPIView):
    @extend_schema(
        tags=["context"],
        request=GetContext.Input,
        responses={200: ContextResponseSerializer, **ERRORS},
        summary=GetContext.summary,
    )
    def post(self, request, bank: str):
        return respond(GetContext, request, bank)
