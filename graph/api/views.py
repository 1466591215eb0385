"""REST views of the graph app (query, and later edges, traverse, resolve, merges)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema

from graph.actions.curation import MergeEntries, ReadOperation, RevertOperation
from graph.actions.edges import (
    InvalidateEdge,
    LinkEntries,
    ReadEdge,
    RenoteEdge,
    RetypeEdge,
    UnlinkEdge,
)
from graph.actions.lookup import ResolveName
from graph.actions.query import QueryAction
from graph.api import schemas as graph_schemas
from kb.api import schemas
from kb.api.actions import respond
from kb.api.views import ERRORS, BankAPIView


class QueryView(BankAPIView):
    @extend_schema(
        request=QueryAction.Input,
        responses={200: schemas.QueryResponseSerializer, **ERRORS},
        summary=QueryAction.summary,
    )
    def post(self, request, bank: str):
        return respond(QueryAction, request, bank)


class EdgeListView(BankAPIView):
    @extend_schema(
        request=LinkEntries.Input,
        responses={201: graph_schemas.EdgeWrittenSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary=LinkEntries.summary,
    )
    def post(self, request, bank: str):
        return respond(LinkEntries, request, bank)


class EdgeDetailView(BankAPIView):
    @extend_schema(
        responses={200: graph_schemas.EdgeSerializer, **ERRORS},
        summary=ReadEdge.summary,
    )
    def get(self, request, bank: str, edge_id: str):
        return respond(ReadEdge, request, bank, edge_id=edge_id)

    @extend_schema(
        request=RenoteEdge.Input,
        responses={200: graph_schemas.EdgeSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary=RenoteEdge.summary,
    )
    def patch(self, request, bank: str, edge_id: str):
        return respond(RenoteEdge, request, bank, edge_id=edge_id)


class EdgeUnlinkView(BankAPIView):
    @extend_schema(
        request=UnlinkEdge.Input,
        responses={200: graph_schemas.EdgeSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary=UnlinkEdge.summary,
    )
    def post(self, request, bank: str, edge_id: str):
        return respond(UnlinkEdge, request, bank, edge_id=edge_id)


class EdgeRetypeView(BankAPIView):
    @extend_schema(
        request=RetypeEdge.Input,
        responses={200: graph_schemas.EdgeSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary=RetypeEdge.summary,
    )
    def post(self, request, bank: str, edge_id: str):
        return respond(RetypeEdge, request, bank, edge_id=edge_id)


class EdgeInvalidateView(BankAPIView):
    @extend_schema(
        request=InvalidateEdge.Input,
        responses={200: graph_schemas.EdgeSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary=InvalidateEdge.summary,
    )
    def post(self, request, bank: str, edge_id: str):
        return respond(InvalidateEdge, request, bank, edge_id=edge_id)


class ResolveView(BankAPIView):
    @extend_schema(
        parameters=[ResolveName.Query],
        responses={200: graph_schemas.ResolveSerializer, **ERRORS},
        summary=ResolveName.summary,
    )
    def get(self, request, bank: str):
        return respond(ResolveName, request, bank)


class MergeView(BankAPIView):
    @extend_schema(
        request=MergeEntries.Input,
        responses={201: graph_schemas.MergeResultSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary=MergeEntries.summary,
    )
    def post(self, request, bank: str):
        return respond(MergeEntries, request, bank)


class OperationView(BankAPIView):
    @extend_schema(
        responses={200: graph_schemas.OperationSerializer, **ERRORS},
        summary=ReadOperation.summary,
    )
    def get(self, request, bank: str, op_id: str):
        return respond(ReadOperation, request, bank, op_id=op_id)


class OperationRevertView(BankAPIView):
    @extend_schema(
        request=RevertOperation.Input,
        responses={200: graph_schemas.RevertResultSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary=RevertOperation.summary,
    )
    def post(self, request, bank: str, op_id: str):
        return respond(RevertOperation, request, bank, op_id=op_id)
