"""REST views of traversals, the parameterised questions, both clocks and corrections.

Each view runs one action of :mod:`graph.actions.traverse` (the request declarations live
there); the entry-as-of view is kb's entry read with ``as_of``.

- ``POST banks/{bank}/traverse`` — the traversal of API.md.
- ``GET banks/{bank}/entities/{id}/dependents?depth=2`` — who depends on it (``depends_on`` in).
- ``GET banks/{bank}/entities/{id}/owners`` — who owns it (``owned_by`` out, one hop).
- ``GET banks/{bank}/entities/{id}/approvals`` — who must approve a change to it.
- ``GET banks/{bank}/entities/{id}/changes?from=…&to=…`` — edge changes in [from, to).
  The first three also take ``valid_at``, ``as_of``, ``max_expansions``, ``max_paths`` and
  ``max_evidence_tokens``; their responses are traversal responses plus the answer list.
- ``GET banks/{bank}/entries/{id}/as_of?as_of=…`` — the entry as believed then (the service
  the entry detail view delegates to for ``?as_of=``).
- ``POST banks/{bank}/corrections`` — the correction workflow of ``004_*`` 12.6 (scope write).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from graph.actions.traverse import (  # noqa: F401 — request shapes re-exported for readers
    ApprovalsFor,
    ChangesOf,
    CorrectEdges,
    CorrectionRequestSerializer,
    DependentsOf,
    OwnersOf,
    TraverseGraph,
    TraverseRequestSerializer,
    clean_query,
)
from graph.retrieval import history
from kb.api import schemas
from kb.api.actions import respond
from kb.api.auth import bank_for
from kb.api.views import ERRORS, BankAPIView
from kb.models import Bank, Scope

# --- answers (the requests are declared by the actions, graph.actions.traverse) ------------


class TraversePathSerializer(serializers.Serializer):
    nodes = serializers.ListField(child=serializers.CharField())
    edges = serializers.ListField(child=serializers.IntegerField())


class TraverseResponseSerializer(serializers.Serializer):
    start = serializers.DictField()
    paths = TraversePathSerializer(many=True)
    nodes = serializers.DictField(help_text="short_id → {title, kind, key}")
    edges = serializers.DictField(
        help_text="edge id → {from, to, relation, note, note_in, evidence, valid_from, valid_to, "
        "recorded_at}; note is read from the from end, note_in from the to end (they differ "
        "for system notes)"
    )
    truncated = serializers.BooleanField()
    limits_hit = serializers.ListField(child=serializers.CharField())
    frontier = serializers.ListField(child=serializers.CharField())
    counts = serializers.DictField()
    searched = serializers.DictField()


class DependentsResponseSerializer(TraverseResponseSerializer):
    dependents = serializers.ListField(child=serializers.DictField())


class OwnersResponseSerializer(TraverseResponseSerializer):
    owners = serializers.ListField(child=serializers.DictField())


class ApprovalsResponseSerializer(serializers.Serializer):
    entity = serializers.DictField()
    rule = serializers.CharField()
    approvers = serializers.ListField(child=serializers.DictField())
    paths = TraversePathSerializer(many=True)
    nodes = serializers.DictField()
    edges = serializers.DictField()
    truncated = serializers.BooleanField()
    limits_hit = serializers.ListField(child=serializers.CharField())
    frontier = serializers.ListField(child=serializers.CharField())
    searched = serializers.ListField(child=serializers.DictField())


class ChangesResponseSerializer(serializers.Serializer):
    entity = serializers.DictField()
    edge_changes = serializers.ListField(child=serializers.DictField())
    entry_changes = serializers.ListField(child=serializers.DictField())
    counts = serializers.DictField()
    searched = serializers.DictField()

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField()
        fields["to"] = serializers.DateTimeField()
        return fields


class CorrectionResultSerializer(serializers.Serializer):
    operation = serializers.IntegerField()
    closed = serializers.ListField(child=serializers.IntegerField())
    appended = serializers.ListField(child=serializers.IntegerField())


def _param(name: str, description: str, type_=str) -> OpenApiParameter:
    return OpenApiParameter(name, type_, required=False, description=description)


TIMESTAMP = {"type": "string", "format": "date-time"}
DATE_OR_TIMESTAMP = {
    "anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}]
}


def entry_as_of_response(bank: Bank, entry_id: str, query) -> dict:
    """``GET …/entries/{id}?as_of=…[&valid_at=…]``: the entry as the bank believed it then.
    The entry detail view delegates here when ``as_of`` is present (see graph/apps.py)."""
    # max_chars is the entry view's own parameter (it cuts the texts of this answer).
    data = clean_query(query, {"as_of", "valid_at", "max_chars"})
    return history.entry_as_of(bank, entry_id, data.get("as_of"), data.get("valid_at"))


# --- views --------------------------------------------------------------------------------------


class TraverseView(BankAPIView):
    @extend_schema(
        request=TraverseGraph.Input,
        responses={200: TraverseResponseSerializer, **ERRORS},
        summary=TraverseGraph.summary,
    )
    def post(self, request, bank: str):
        return respond(TraverseGraph, request, bank)


class DependentsView(BankAPIView):
    @extend_schema(
        parameters=[DependentsOf.Query],
        responses={200: DependentsResponseSerializer, **ERRORS},
        summary=DependentsOf.summary,
    )
    def get(self, request, bank: str, entry_id: str):
        return respond(DependentsOf, request, bank, entry_id=entry_id)


class OwnersView(BankAPIView):
    @extend_schema(
        parameters=[OwnersOf.Query],
        responses={200: OwnersResponseSerializer, **ERRORS},
        summary=OwnersOf.summary,
    )
    def get(self, request, bank: str, entry_id: str):
        return respond(OwnersOf, request, bank, entry_id=entry_id)


class ApprovalsView(BankAPIView):
    @extend_schema(
        parameters=[ApprovalsFor.Query],
        responses={200: ApprovalsResponseSerializer, **ERRORS},
        summary=ApprovalsFor.summary,
    )
    def get(self, request, bank: str, entry_id: str):
        return respond(ApprovalsFor, request, bank, entry_id=entry_id)


class ChangesView(BankAPIView):
    @extend_schema(
        parameters=[ChangesOf.Query],
        responses={200: ChangesResponseSerializer, **ERRORS},
        summary=ChangesOf.summary,
    )
    def get(self, request, bank: str, entry_id: str):
        return respond(ChangesOf, request, bank, entry_id=entry_id)


class EntryAsOfView(BankAPIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "as_of", TIMESTAMP, required=True, description="An ISO 8601 timestamp with a zone."
            ),
            _param("valid_at", "Valid time of the edges (default: as_of).", DATE_OR_TIMESTAMP),
        ],
        responses={200: schemas.EntrySerializer, **ERRORS},
        summary="An entry as the bank believed it at as_of",
    )
    def get(self, request, bank: str, entry_id: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        return Response(entry_as_of_response(bank_obj, entry_id, request.query_params))


class CorrectionsView(BankAPIView):
    @extend_schema(
        request=CorrectEdges.Input,
        responses={200: CorrectionResultSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary=CorrectEdges.summary,
    )
    def post(self, request, bank: str):
        return respond(CorrectEdges, request, bank)
