"""REST views of the graph app (query, and later edges, traverse, resolve, merges)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from graph.services.query import QueryParams, run_query
from kb.api import schemas
from kb.api.auth import bank_for
from kb.api.errors import ApiError
from kb.api.views import ERRORS, BankAPIView
from kb.models import Scope


class QueryView(BankAPIView):
    @extend_schema(
        request=schemas.QueryRequestSerializer,
        responses={200: schemas.QueryResponseSerializer, **ERRORS},
        summary="Query the bank (the fold query)",
    )
    def post(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        body = self.json_body(request)
        serializer = schemas.QueryRequestSerializer(data=body)
        serializer.is_valid(raise_exception=True)
        unknown = sorted(set(body) - set(serializer.fields))
        if unknown:
            raise ApiError(
                400,
                "invalid_input",
                f"Unknown fields: {', '.join(unknown)}.",
                {name: "Unknown field." for name in unknown},
            )
        data = serializer.validated_data
        if not data["query"].strip():
            raise ApiError(
                400, "invalid_input", "query must not be blank.", {"query": "Must not be blank."}
            )
        return Response(run_query(bank_obj, QueryParams(**data)))
