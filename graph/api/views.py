"""REST views of the graph app (query, and later edges, traverse, resolve, merges)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from graph.api import schemas as graph_schemas
from graph.api.render import edge_json, entry_with_graph
from graph.curation import merge as curation
from graph.curation import revert
from graph.edges import links as edges
from graph.resolution.aliases import resolve
from graph.retrieval.query import QueryAction
from graph.retrieval.query_input import QueryRequestSerializer
from kb.api import schemas
from kb.api.auth import actor_for, bank_for
from kb.api.errors import ApiError
from kb.api.views import ERRORS, BankAPIView
from kb.inputs import parse_int_id
from kb.models import Scope
from kb.services.feedback import note_warnings


class QueryView(BankAPIView):
    @extend_schema(
        request=QueryRequestSerializer,
        responses={200: schemas.QueryResponseSerializer, **ERRORS},
        summary="Query the bank (the fold query)",
    )
    def post(self, request, bank: str):
        bank_obj = bank_for(request, bank, QueryAction.scope)
        action = QueryAction.from_body(bank_obj, self.json_body(request), actor=actor_for(request))
        return Response(action.run())


class EdgeListView(BankAPIView):
    @extend_schema(
        request=graph_schemas.EdgeCreateSerializer,
        responses={201: graph_schemas.EdgeWrittenSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary="Link two entries",
    )
    def post(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.WRITE)
        body = self.json_body(request)
        payload = {k: v for k, v in body.items() if k != "reason"}
        edge = edges.link(
            bank_obj, payload, reason=str(body.get("reason") or ""), actor=actor_for(request)
        )
        warnings = [w.as_json() for w in note_warnings([payload], prefix="")]
        return Response(
            {**edge_json(edges.get_edge(bank_obj, edge.pk)), "warnings": warnings}, status=201
        )


class EdgeDetailView(BankAPIView):
    @extend_schema(
        responses={200: graph_schemas.EdgeSerializer, **ERRORS},
        summary="Read an edge (any version)",
    )
    def get(self, request, bank: str, edge_id: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        return Response(edge_json(edges.get_edge(bank_obj, edge_id)))

    @extend_schema(
        request=graph_schemas.RenoteSerializer,
        responses={200: graph_schemas.EdgeSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary="Correct an edge's note (closes the row, appends the corrected one)",
    )
    def patch(self, request, bank: str, edge_id: str):
        bank_obj = bank_for(request, bank, Scope.WRITE)
        body = self.json_body(request)
        unknown = sorted(set(body) - {"note", "reason"})
        if unknown:
            raise ApiError(
                400,
                "invalid_input",
                f"Only note and reason can be changed here; unknown: {', '.join(unknown)}.",
                dict.fromkeys(unknown, "Unknown field."),
            )
        edge = edges.renote(
            bank_obj, edge_id, body.get("note"), body.get("reason"), actor=actor_for(request)
        )
        return Response(edge_json(edges.get_edge(bank_obj, edge.pk)))


class EdgeUnlinkView(BankAPIView):
    @extend_schema(
        request=graph_schemas.ReasonSerializer,
        responses={200: graph_schemas.EdgeSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary="Unlink an edge (closes its transaction interval)",
    )
    def post(self, request, bank: str, edge_id: str):
        bank_obj = bank_for(request, bank, Scope.WRITE)
        body = self.json_body(request)
        edge = edges.unlink(bank_obj, edge_id, body.get("reason"), actor=actor_for(request))
        return Response(edge_json(edges.get_edge(bank_obj, edge.pk)))


class EdgeRetypeView(BankAPIView):
    @extend_schema(
        request=graph_schemas.RetypeSerializer,
        responses={200: graph_schemas.EdgeSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary="Retype an edge (closes the row, appends the retyped one)",
    )
    def post(self, request, bank: str, edge_id: str):
        bank_obj = bank_for(request, bank, Scope.WRITE)
        body = self.json_body(request)
        edge = edges.retype(
            bank_obj,
            edge_id,
            body.get("relation"),
            body.get("reason"),
            actor=actor_for(request),
            label=str(body.get("label") or ""),
        )
        return Response(edge_json(edges.get_edge(bank_obj, edge.pk)))


class EdgeInvalidateView(BankAPIView):
    @extend_schema(
        request=graph_schemas.InvalidateSerializer,
        responses={200: graph_schemas.EdgeSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary="Close an edge's valid time, keeping the old belief",
    )
    def post(self, request, bank: str, edge_id: str):
        bank_obj = bank_for(request, bank, Scope.WRITE)
        body = self.json_body(request)
        edge = edges.invalidate(
            bank_obj, edge_id, body.get("valid_to"), body.get("reason"), actor=actor_for(request)
        )
        return Response(edge_json(edges.get_edge(bank_obj, edge.pk)))


class ResolveView(BankAPIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "q",
                schemas.NONBLANK_TEXT,
                required=True,
                description="A surface form: id, key, alias or name.",
            )
        ],
        responses={200: graph_schemas.ResolveSerializer, **ERRORS},
        summary="Resolve a name to an entry",
    )
    def get(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        q = request.query_params.get("q")
        if q is None or not q.strip():
            raise ApiError(
                400, "invalid_input", "Give the surface form to resolve as ?q=…", {"q": "Required."}
            )
        result = resolve(bank_obj, q)
        return Response(
            {
                "status": result.status,
                "matched": result.matched,
                "entry": entry_with_graph(result.entry) if result.entry else None,
                "candidates": result.candidates,
            }
        )


class MergeView(BankAPIView):
    @extend_schema(
        request=graph_schemas.MergeRequestSerializer,
        responses={201: graph_schemas.MergeResultSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary="Merge one entry into another",
    )
    def post(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.CURATE)
        body = self.json_body(request)
        result = curation.merge_entries(
            bank_obj,
            body.get("keep"),
            body.get("away"),
            body.get("reason"),
            actor=actor_for(request),
        )
        return Response(result.as_json(), status=201)


class OperationView(BankAPIView):
    @extend_schema(
        responses={200: graph_schemas.OperationSerializer, **ERRORS},
        summary="An operation and the rows it changed",
    )
    def get(self, request, bank: str, op_id: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        op = _operation(bank_obj, op_id)
        return Response(
            {
                "id": op.pk,
                "kind": op.kind,
                "actor": op.actor,
                "reason": op.reason,
                "time": op.created_at.isoformat(),
                "details": op.details,
                "reverted_by": op.reverted_by_id,
                "changes": revert.operation_changes(op),
            }
        )


class OperationRevertView(BankAPIView):
    @extend_schema(
        request=graph_schemas.RevertRequestSerializer,
        responses={200: graph_schemas.RevertResultSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary="Revert an operation exactly",
    )
    def post(self, request, bank: str, op_id: str):
        bank_obj = bank_for(request, bank, Scope.CURATE)
        body = self.json_body(request)
        force = body.get("force", False)
        if not isinstance(force, bool):
            raise ApiError(
                400,
                "invalid_input",
                "force must be true or false.",
                {"force": "Must be a boolean."},
            )
        result = revert.revert_operation(
            bank_obj,
            _operation(bank_obj, op_id).pk,
            body.get("reason"),
            force=force,
            actor=actor_for(request),
        )
        return Response({"operation": result.operation.pk, "reverted": result.reverted.pk})


def _operation(bank, op_id):
    from kb.models import Operation

    try:
        return Operation.objects.get(bank=bank, pk=parse_int_id(op_id, "op_id"))
    except Operation.DoesNotExist:
        raise ApiError(
            404, "operation_not_found", f"No operation {op_id!r} in this bank."
        ) from None
