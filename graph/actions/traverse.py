"""Traversal use cases: the traverse of API.md, the entity questions (dependents, owners,
approvals, changes) and the correction workflow. Their inputs are declared here (the OpenAPI
operations and the MCP ``traverse`` tool come from them).

The traversal's values are checked by :mod:`graph.traversal.requests` (and the questions' by
the same cleaners, from query-string text), whose codes (``invalid_start``, ``invalid_limit``,
``invalid_time``…) are the contract: these actions refuse fields the declaration does not name
and leave the values to those cleaners, the one place their rules live.
"""

from __future__ import annotations

import re
from typing import ClassVar

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from graph.actions.edges import EdgeCreateSerializer
from graph.actions.fields import named_fields_only
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
from kb.actions.base import Action
from kb.api import schemas
from kb.api.errors import ApiError
from kb.api.openapi import schema_keywords
from kb.api.params import reject_unknown
from kb.api.schemas import InstantField, KindField, NonBlankField, RelationField
from kb.models import Scope
from kb.services.entries import find_entry

# --- declarations ---------------------------------------------------------------------------


def _relation_names(**kwargs):
    return serializers.ListField(
        child=RelationField(), min_length=1, max_length=MAX_RELATIONS_PER_STEP, **kwargs
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
        child=KindField(),
        required=False,
        allow_null=True,
        min_length=1,
        max_length=100,
        help_text="Allow-list of entry kinds the walk may reach (the start is exempt).",
    )


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


# In a query string '+' decodes to a space: "2026-04-22T00:00:00 00:00" meant "+00:00".
_LOST_PLUS = re.compile(r"^(\S+\d) (\d\d(?::?\d\d)?)$")


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


def reached(result: traverse.TraversalResult, depth_of: bool = False) -> list[dict]:
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


# --- actions --------------------------------------------------------------------------------


class TraverseGraph(Action):
    """Walk typed edges from one entry with explicit limits, at a valid time and as believed
    at a transaction time."""

    name = "traverse"
    summary = "Traverse the graph from an entry (typed, budgeted, both clocks)"
    Input = TraverseRequestSerializer

    @classmethod
    def clean(cls, query, body) -> dict:
        return named_fields_only(cls.Input, body)

    def execute(self):
        return requests.clean_traversal(self.bank, self.data).run(self.bank)

    def present(self, result) -> dict:
        return result.as_json()


def _text_param(description: str):
    return serializers.CharField(required=False, help_text=description)


def _int_param(low: int, high: int, default: int | None, description: str):
    return serializers.IntegerField(
        required=False, min_value=low, max_value=high, default=default, help_text=description
    )


class QuestionQuery(serializers.Serializer):
    valid_at = InstantField(
        required=False, allow_blank=True, help_text="Valid time: a date or timestamp (default now)."
    )
    as_of = serializers.DateTimeField(
        required=False,
        help_text="Transaction time: an ISO 8601 timestamp with a zone (default now).",
    )
    max_expansions = _int_param(1, MAX_EXPANSIONS, 200, "Edge records read, at most.")
    max_paths = _int_param(1, MAX_PATHS, 25, "Paths returned, at most.")
    max_evidence_tokens = _int_param(
        0, MAX_EVIDENCE_TOKENS, 2000, "Approximate tokens of notes and evidence."
    )


class DependentsQuery(QuestionQuery):
    depth = _int_param(
        1, MAX_DEPTH, traverse.DEFAULT_DEPTH, "Hops of depends_on to follow inbound."
    )


class EntityQuestion(Action):
    """A parameterised question about one entity, its parameters from the query string (as
    text: the traversal cleaners read them, a '+' of a zone put back)."""

    path_ids = {"id": "entry_id"}
    Query: ClassVar[type] = QuestionQuery

    @classmethod
    def clean(cls, query, body) -> dict:
        allowed = set(cls.Query().fields)
        if hasattr(query, "getlist"):
            return clean_query(query, allowed)
        reject_unknown(dict(query), allowed)
        return {k: v for k, v in query.items() if v is not None}

    def question(self) -> tuple:
        """The entity and the clocks and limits every question takes."""
        valid_at, as_of = requests.clean_clocks(self.data)
        entity = find_entry(self.bank, self.ids["id"])
        limits = {k: v for k, v in self.data.items() if k.startswith("max_")}
        limits = requests.clean_limits(limits, from_text=True)
        return entity, {"limits": limits, "valid_at": valid_at, "as_of": as_of}


class DependentsOf(EntityQuestion):
    """Who depends on an entity (depends_on, inbound, up to depth hops)."""

    name = "entities.dependents"
    summary = "Who depends on an entity (depends_on, inbound, up to depth hops)"
    Query = DependentsQuery

    def execute(self):
        entity, clocks = self.question()
        depth = requests.clean_limit(
            "max_depth", self.data.get("depth"), traverse.DEFAULT_DEPTH, from_text=True
        )
        return questions.dependents_of(self.bank, entity, depth, **clocks)

    def present(self, result) -> dict:
        return {**result.as_json(), "dependents": reached(result, depth_of=True)}


class OwnersOf(EntityQuestion):
    """Who owns an entity (owned_by, at valid_at, as believed at as_of)."""

    name = "entities.owners"
    summary = "Who owns an entity (owned_by, at valid_at, as believed at as_of)"

    def execute(self):
        entity, clocks = self.question()
        return questions.owners_of(self.bank, entity, **clocks)

    def present(self, result) -> dict:
        return {**result.as_json(), "owners": reached(result)}


class ApprovalsFor(EntityQuestion):
    """Who must approve a change to an entity."""

    name = "entities.approvals"
    summary = "Who must approve a change to an entity (see the rule in the response)"

    def execute(self):
        entity, clocks = self.question()
        return questions.approvals_required_for(self.bank, entity, **clocks)

    def present(self, answer) -> dict:
        return answer.as_json()


class ChangesQuery(serializers.Serializer):
    def get_fields(self):
        # "from" is a Python keyword, so not a class attribute.
        return {
            "from": serializers.DateTimeField(
                help_text="Start (inclusive): timestamp with a zone."
            ),
            "to": serializers.DateTimeField(
                required=False, help_text="End (exclusive): timestamp with a zone (default now)."
            ),
        }


class ChangesOf(EntityQuestion):
    """Edges touching an entity recorded or invalidated in [from, to)."""

    name = "entities.changes"
    summary = "Edges touching an entity recorded or invalidated in [from, to)"
    Query = ChangesQuery

    def execute(self):
        entity = find_entry(self.bank, self.ids["id"])
        return history.changed_between(
            self.bank, entity, self.data.get("from"), self.data.get("to")
        )

    def present(self, report) -> dict:
        return report.as_json()


class CorrectEdges(Action):
    """Close old beliefs and append corrected versions, as one operation."""

    name = "edges.correct"
    summary = "Correct edges: close old beliefs, append corrected versions (one operation)"
    scope = Scope.WRITE
    Input = CorrectionRequestSerializer

    @classmethod
    def clean(cls, query, body) -> dict:
        body = named_fields_only(cls.Input, body)
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
        return {"close": close, "append": append, "reason": body.get("reason")}

    def execute(self) -> dict:
        return correct_edges(
            self.bank,
            self.data["close"],
            self.data["append"],
            self.data["reason"],
            actor=self.caller.actor,
        )
