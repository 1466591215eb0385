"""REST views of traversals, the parameterised questions, both clocks and corrections.

Thin: parse and validate the request (the services' cleaners), call one service, render.

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

import re

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from graph.api.schemas import EdgeCreateSerializer
from graph.edges.links import correct_edges
from graph.retrieval import history
from graph.traversal import questions, requests
from graph.traversal import walk as traverse
from graph.traversal.walk import (
    DIRECTIONS,
    MAX_DEPTH,
    MAX_EVIDENCE_TOKENS,
    MAX_EXPANSIONS,
    MAX_PATHS,
    MAX_RELATIONS_PER_STEP,
)
from kb.api import schemas
from kb.api.auth import actor_for, bank_for
from kb.api.errors import ApiError
from kb.api.openapi import schema_keywords
from kb.api.params import int_query, reject_unknown
from kb.api.schemas import InstantField, NonBlankField
from kb.api.views import ERRORS, BankAPIView
from kb.models import Bank, Scope
from kb.services.entries import find_entry

# --- schema documentation (validation lives in the services) ------------------------------------


def _relation_names(**kwargs):
    return serializers.ListField(
        child=NonBlankField(), min_length=1, max_length=MAX_RELATIONS_PER_STEP, **kwargs
    )


class TraverseStepSerializer(serializers.Serializer):
    relations = _relation_names()
    direction = serializers.ChoiceField(
        choices=DIRECTIONS, required=False, allow_null=True, help_text="out (default), in, both."
    )


_START_TEXT = {"type": "string", "pattern": schemas.NONBLANK, "maxLength": 300}


@extend_schema_field(
    {
        "oneOf": [
            _START_TEXT,
            *(
                {
                    "type": "object",
                    "properties": {how: _START_TEXT},
                    "required": [how],
                    "additionalProperties": False,
                }
                for how in ("id", "key", "name")
            ),
        ]
    }
)
class StartField(serializers.JSONField):
    """An entry id, or one of {"id"}, {"key"}, {"name"}."""


def _limit(low: int, high: int, **kwargs):
    return serializers.IntegerField(
        required=False, allow_null=True, min_value=low, max_value=high, **kwargs
    )


@schema_keywords(
    # Either steps (each with its own direction) or relations (+ direction): exactly one.
    anyOf=[
        {
            "type": "object",
            "required": ["start", "steps"],
            "properties": {
                "steps": {"type": "array"},
                "relations": {"type": "null"},
                "direction": {"type": "null"},
            },
        },
        {
            "type": "object",
            "required": ["start", "relations"],
            "properties": {"relations": {"type": "array"}, "steps": {"type": "null"}},
        },
    ]
)
class TraverseRequestSerializer(serializers.Serializer):
    start = StartField(help_text='An entry id, {"key": "..."} or {"name": "..."}.')
    steps = serializers.ListField(
        child=TraverseStepSerializer(),
        required=False,
        allow_null=True,
        min_length=1,
        max_length=MAX_DEPTH,
        help_text="One allow-list per hop.",
    )
    relations = _relation_names(
        required=False, allow_null=True, help_text="Same allow-list every hop."
    )
    direction = serializers.ChoiceField(
        choices=DIRECTIONS, required=False, allow_null=True, help_text="With relations only."
    )
    max_depth = _limit(1, MAX_DEPTH)
    max_expansions = _limit(1, MAX_EXPANSIONS, default=200)
    max_paths = _limit(1, MAX_PATHS, default=25)
    max_evidence_tokens = _limit(0, MAX_EVIDENCE_TOKENS, default=2000)
    valid_at = InstantField(required=False, allow_null=True)
    as_of = serializers.DateTimeField(required=False, allow_null=True)
    kinds = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        allow_null=True,
        min_length=1,
        max_length=100,
        help_text="Allow-list of entry kinds the walk may reach (the start is exempt).",
    )


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


class AppendedEdgeSerializer(EdgeCreateSerializer):
    reason = None  # one reason for the whole correction


@schema_keywords(
    anyOf=[
        {"type": "object", "required": ["reason", name], "properties": {name: {"minItems": 1}}}
        for name in ("close", "append")
    ]
)
class CorrectionRequestSerializer(serializers.Serializer):
    close = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False)
    append = AppendedEdgeSerializer(
        many=True,
        required=False,
        help_text="Edges to append: {from, to, relation, valid_from, valid_to, note, evidence}.",
    )
    reason = NonBlankField()


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
CLOCK_PARAMS = [
    _param("valid_at", "Valid time: a date or timestamp (default now).", DATE_OR_TIMESTAMP),
    _param(
        "as_of", "Transaction time: an ISO 8601 timestamp with a zone (default now).", TIMESTAMP
    ),
]
LIMIT_PARAMS = [
    _param("max_expansions", "Edge records read, at most (default 200).", int),
    _param("max_paths", "Paths returned, at most (default 25).", int),
    _param("max_evidence_tokens", "Approximate tokens of notes and evidence (default 2000).", int),
]

# --- helpers ------------------------------------------------------------------------------------

# In a query string '+' decodes to a space: "2026-04-22T00:00:00 00:00" meant "+00:00".
_LOST_PLUS = re.compile(r"^(\S+\d) (\d\d(?::?\d\d)?)$")


def query_params(request, allowed: set[str]) -> dict:
    """The query parameters as a dict: 400 for an unknown or repeated one."""
    return clean_query(request.query_params, allowed)


def clean_query(query, allowed: set[str]) -> dict:
    """A QueryDict as a plain dict of the ``allowed`` names (400 for an unknown or repeated
    name), with the '+' of a zone that the query string turned into a space put back."""
    unknown = sorted(set(query) - allowed)
    if unknown:
        raise ApiError(
            400,
            "invalid_input",
            f"Unknown parameters: {', '.join(unknown)}.",
            dict.fromkeys(unknown, "Unknown parameter."),
        )
    data = {}
    for name in query:
        values = query.getlist(name)
        if len(values) != 1:
            raise ApiError(400, "invalid_input", f"Give {name} once.", {name: "Repeated."})
        data[name] = _LOST_PLUS.sub(r"\1+\2", values[0].strip())
    return data


def entry_as_of_response(bank: Bank, entry_id: str, query) -> dict:
    """``GET …/entries/{id}?as_of=…[&valid_at=…]``: the entry as the bank believed it then.
    The entry detail view delegates here when ``as_of`` is present (see graph/apps.py)."""
    # max_chars is the entry view's own parameter (it cuts the texts of this answer).
    data = clean_query(query, {"as_of", "valid_at", "max_chars"})
    return history.entry_as_of(bank, entry_id, data.get("as_of"), data.get("valid_at"))


def _limits(data: dict, **kw) -> traverse.Limits:
    limits = {k: v for k, v in data.items() if k.startswith("max_")}
    return requests.clean_limits(limits, from_text=True, **kw)


def _answer(result: traverse.TraversalResult, depth_of: bool = False) -> list[dict]:
    """The distinct entries reached (not the start), in discovery order."""
    out = []
    for pk, info in result.nodes.items():
        if pk == result.start.pk:
            continue
        item = {"id": info.short_id, "title": info.title, "kind": info.kind, "key": info.key}
        if depth_of:
            item["depth"] = result.depth[pk]
        out.append(item)
    return out


# --- views --------------------------------------------------------------------------------------


class TraverseView(BankAPIView):
    @extend_schema(
        request=TraverseRequestSerializer,
        responses={200: TraverseResponseSerializer, **ERRORS},
        summary="Traverse the graph from an entry (typed, budgeted, both clocks)",
    )
    def post(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        plan = requests.clean_traversal(bank_obj, self.json_body(request))
        return Response(plan.run(bank_obj).as_json())


QUESTION_PARAMS = {"valid_at", "as_of", "max_expansions", "max_paths", "max_evidence_tokens"}


def _question(request, bank: str, entry_id: str, extra: set[str] = frozenset()) -> tuple:
    """What every entity question parses: the bank, the entity, its query parameters, the
    limits and both clocks."""
    bank_obj = bank_for(request, bank, Scope.READ)
    data = query_params(request, QUESTION_PARAMS | set(extra))
    valid_at, as_of = requests.clean_clocks(data)
    entity = find_entry(bank_obj, entry_id)
    return bank_obj, entity, data, {"limits": _limits(data), "valid_at": valid_at, "as_of": as_of}


class DependentsView(BankAPIView):
    @extend_schema(
        parameters=[
            int_query(
                "depth",
                traverse.DEFAULT_DEPTH,
                1,
                MAX_DEPTH,
                "Hops of depends_on to follow inbound.",
            )
        ]
        + CLOCK_PARAMS
        + LIMIT_PARAMS,
        responses={200: DependentsResponseSerializer, **ERRORS},
        summary="Who depends on an entity (depends_on, inbound, up to depth hops)",
    )
    def get(self, request, bank: str, entry_id: str):
        bank_obj, entity, data, clocks = _question(request, bank, entry_id, {"depth"})
        depth = requests.clean_limit(
            "max_depth", data.get("depth"), traverse.DEFAULT_DEPTH, from_text=True
        )
        result = questions.dependents_of(bank_obj, entity, depth, **clocks)
        return Response({**result.as_json(), "dependents": _answer(result, depth_of=True)})


class OwnersView(BankAPIView):
    @extend_schema(
        parameters=CLOCK_PARAMS + LIMIT_PARAMS,
        responses={200: OwnersResponseSerializer, **ERRORS},
        summary="Who owns an entity (owned_by, at valid_at, as believed at as_of)",
    )
    def get(self, request, bank: str, entry_id: str):
        bank_obj, entity, _, clocks = _question(request, bank, entry_id)
        result = questions.owners_of(bank_obj, entity, **clocks)
        return Response({**result.as_json(), "owners": _answer(result)})


class ApprovalsView(BankAPIView):
    @extend_schema(
        parameters=CLOCK_PARAMS + LIMIT_PARAMS,
        responses={200: ApprovalsResponseSerializer, **ERRORS},
        summary="Who must approve a change to an entity (see the rule in the response)",
    )
    def get(self, request, bank: str, entry_id: str):
        bank_obj, entity, _, clocks = _question(request, bank, entry_id)
        answer = questions.approvals_required_for(bank_obj, entity, **clocks)
        return Response(answer.as_json())


class ChangesView(BankAPIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "from",
                TIMESTAMP,
                required=True,
                description="Start (inclusive): timestamp with a zone.",
            ),
            _param("to", "End (exclusive): timestamp with a zone (default now).", TIMESTAMP),
        ],
        responses={200: ChangesResponseSerializer, **ERRORS},
        summary="Edges touching an entity recorded or invalidated in [from, to)",
    )
    def get(self, request, bank: str, entry_id: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        data = query_params(request, {"from", "to"})
        entity = find_entry(bank_obj, entry_id)
        report = history.changed_between(bank_obj, entity, data.get("from"), data.get("to"))
        return Response(report.as_json())


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
        request=CorrectionRequestSerializer,
        responses={200: CorrectionResultSerializer, 409: schemas.ErrorEnvelope, **ERRORS},
        summary="Correct edges: close old beliefs, append corrected versions (one operation)",
    )
    def post(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.WRITE)
        body = self.json_body(request)
        reject_unknown(body, {"close", "append", "reason"})
        close, append = body.get("close") or [], body.get("append") or []
        if not isinstance(close, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in close
        ):
            raise ApiError(
                400, "invalid_input", "close must be a list of edge ids.", {"close": "Edge ids."}
            )
        if not isinstance(append, list) or not all(isinstance(item, dict) for item in append):
            raise ApiError(
                400,
                "invalid_input",
                "append must be a list of edge objects.",
                {"append": "Edge objects."},
            )
        if any("source" in item for item in append):
            raise ApiError(
                400,
                "invalid_input",
                "append items take from, to, relation, note, evidence, valid_from, valid_to.",
                {"append": "source is set by the correction."},
            )
        result = correct_edges(
            bank_obj, close, append, body.get("reason"), actor=actor_for(request)
        )
        return Response(result)
