"""REST views of entries (API.md "Entries"): each method runs one action of
:mod:`graph.actions.entries` — the entry answers carry the graph's edges and aliases, and
create/delete need edges, so the routes live in the graph app."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema

from graph.actions import entries as actions
from kb.api import schemas
from kb.api.actions import respond
from kb.api.views import ERRORS, MAX_CHARS_PARAMETER, BankAPIView


class EntryListView(BankAPIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "ids",
                {"type": "string", "pattern": "^[^\\x00]*[^\\x00\\s,][^\\x00]*$"},
                required=True,
                description=actions.ReadEntries.Query().fields["ids"].help_text,
            ),
            MAX_CHARS_PARAMETER,
        ],
        responses={200: schemas.EntryBatchSerializer, **ERRORS},
        operation_id="banks_entries_batch",
        summary=actions.ReadEntries.summary,
    )
    def get(self, request, bank: str):
        return respond(actions.ReadEntries, request, bank)

    @extend_schema(
        request=actions.CreateEntry.Input,
        responses={
            201: schemas.EntryWrittenSerializer,
            409: schemas.ErrorEnvelope,
            422: schemas.ErrorEnvelope,
            **ERRORS,
        },
        summary=actions.CreateEntry.summary,
    )
    def post(self, request, bank: str):
        return respond(actions.CreateEntry, request, bank)


class EntryDetailView(BankAPIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "as_of",
                {"type": "string", "format": "date-time", "minLength": 1},
                description=actions.ReadQuery().fields["as_of"].help_text,
            ),
            OpenApiParameter(
                "valid_at",
                {
                    "anyOf": [
                        {"type": "string", "format": "date"},
                        {"type": "string", "format": "date-time"},
                    ],
                    "minLength": 1,
                },
                description=actions.ReadQuery().fields["valid_at"].help_text,
            ),
            MAX_CHARS_PARAMETER,
        ],
        responses={200: schemas.EntrySerializer, **ERRORS},
        summary=actions.ReadEntry.summary,
    )
    def get(self, request, bank: str, entry_id: str):
        return respond(actions.ReadEntry, request, bank, entry_id=entry_id)

    @extend_schema(
        request=actions.UpdateEntry.Input,
        responses={200: schemas.EntrySerializer, **ERRORS},
        summary=actions.UpdateEntry.summary,
    )
    def patch(self, request, bank: str, entry_id: str):
        return respond(actions.UpdateEntry, request, bank, entry_id=entry_id)

    @extend_schema(
        parameters=[OpenApiParameter("reason", schemas.NONBLANK_TEXT, required=True)],
        responses={200: schemas.DeleteResultSerializer, **ERRORS},
        summary=actions.DeleteEntry.summary,
    )
    def delete(self, request, bank: str, entry_id: str):
        return respond(actions.DeleteEntry, request, bank, entry_id=entry_id)


class EntryVerifyView(BankAPIView):
    @extend_schema(
        request=actions.VerifyEntry.Input,
        responses={200: schemas.EntrySerializer, **ERRORS},
        summary=actions.VerifyEntry.summary,
    )
    def post(self, request, bank: str, entry_id: str):
        return respond(actions.VerifyEntry, request, bank, entry_id=entry_id)


class EntryRetireView(BankAPIView):
    @extend_schema(
        request=actions.RetireEntry.Input,
        responses={200: schemas.EntrySerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary=actions.RetireEntry.summary,
    )
    def post(self, request, bank: str, entry_id: str):
        return respond(actions.RetireEntry, request, bank, entry_id=entry_id)


class EntryRestoreView(BankAPIView):
    @extend_schema(
        request=actions.RestoreEntry.Input,
        responses={200: schemas.EntrySerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary=actions.RestoreEntry.summary,
    )
    def post(self, request, bank: str, entry_id: str):
        return respond(actions.RestoreEntry, request, bank, entry_id=entry_id)


class EntryDeletePlanView(BankAPIView):
    @extend_schema(
        responses={200: schemas.DeletePlanSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary=actions.DeletePlan.summary,
    )
    def get(self, request, bank: str, entry_id: str):
        return respond(actions.DeletePlan, request, bank, entry_id=entry_id)
