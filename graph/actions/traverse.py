"""Traversal use cases: the traverse of API.md, the entity questions (dependents, owners,
approvals, changes) and the correction workflow.

Their inputs are declared in :mod:`graph.actions.traverse_input` (traverse, the questions) and
here (corrections): serializers that validate with the contract's codes, from which the OpenAPI
operations and the MCP ``traverse`` tool are generated. The bank's side (its vocabulary, the
start's resolution, the edges named) is the services'.
"""

from __future__ import annotations

import re
from typing import ClassVar

from rest_framework import serializers

from graph.actions.edges import EdgeCreateSerializer
from graph.actions.fields import CodedAction, CodedErrors, ReasonField, coded
from graph.actions.traverse_input import (
    DependentsQuery,
    QuestionQuery,
    TraverseRequestSerializer,
)
from graph.edges.links import correct_edges
from graph.retrieval import history
from graph.traversal import questions, requests
from graph.traversal import walk as traverse
from graph.traversal.walk import Limits, collector_paused
from kb.actions.base import Action
from kb.api.errors import ApiError
from kb.api.openapi import schema_keywords
from kb.api.params import reject_unknown, strict_types
from kb.errors import InvalidInput
from kb.models import Scope
from kb.services.entries import find_entry

# --- declarations ---------------------------------------------------------------------------


class AppendedEdgeSerializer(EdgeCreateSerializer):
    reason = None  # one reason for the whole correction


class EdgeIdsField(CodedErrors, serializers.ListField):
    """Edge ids (whole numbers from 1); else 400 ``invalid_input``."""

    def __init__(self, **kwargs):
        super().__init__(
            child=serializers.IntegerField(min_value=1),
            required=False,
            error_code="invalid_input",
            error_message="{name} must be a list of edge ids.",
            error_detail="Edge ids.",
            **kwargs,
        )

    def to_internal_value(self, data):
        if not isinstance(data, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 1 for i in data
        ):
            self.refuse()
        return list(data)


class AppendedEdgesField(CodedErrors, serializers.ListField):
    """Edges to append, each checked as ``POST edges`` checks its body (the bank's side — the
    relation, the ends, the note rule — by the link service); else 400 ``invalid_input``."""

    def __init__(self, **kwargs):
        super().__init__(
            child=AppendedEdgeSerializer(),
            required=False,
            error_code="invalid_input",
            error_message="{name} must be a list of edge objects.",
            error_detail="Edge objects.",
            **kwargs,
        )

    def to_internal_value(self, data):
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            self.refuse()
        edges = []
        for i, item in enumerate(data):
            where = f"append[{i}]"
            strict_types(self.child, item, where)
            try:
                edges.append(dict(self.child.run_validation(item)))
            except serializers.ValidationError as exc:
                detail = exc.detail if isinstance(exc.detail, dict) else {"": exc.detail}
                fields = {
                    f"{where}.{name}".rstrip("."): " ".join(map(str, text))
                    if isinstance(text, list)
                    else str(text)
                    for name, text in detail.items()
                }
                raise InvalidInput(
                    f"{where} is not a valid edge: " + ", ".join(sorted(fields)) + ".",
                    code="invalid_input",
                    fields=fields,
                ) from None
        return edges


@schema_keywords(
    anyOf=[
        {"type": "object", "required": ["reason", name], "properties": {name: {"minItems": 1}}}
        for name in ("close", "append")
    ]
)
class CorrectionRequestSerializer(serializers.Serializer):
    close = EdgeIdsField(help_text="Ids of current edges whose belief is closed.")
    append = AppendedEdgesField(
        help_text="Edges to append: {from, to, relation, valid_from, valid_to, note, evidence}.",
    )
    reason = ReasonField()

    def validate(self, attrs: dict) -> dict:
        if not attrs.get("close") and not attrs.get("append"):
            raise InvalidInput(
                "Name edges to close and/or edges to append.", code="empty_correction"
            )
        return {"close": [], "append": [], **attrs}


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


class TraverseGraph(CodedAction):
    """Walk typed edges from one entry with explicit limits, at a valid time and as believed
    at a transaction time."""

    name = "traverse"
    summary = "Traverse the graph from an entry (typed, budgeted, both clocks)"
    Input = TraverseRequestSerializer

    def run(self):
        # The walk and its answer under one pause of the cyclic collector: when it resumes,
        # the walk's own objects are freed and only the answer is left for it to scan (the
        # walk and as_json pausing apart left it ~10,000 young objects, and promoted them
        # towards the full collections; see collector_paused).
        with collector_paused():
            return super().run()

    def execute(self):
        return requests.traversal_request(self.bank, self.data).run(self.bank)

    def present(self, result) -> dict:
        return result.as_json()


class EntityQuestion(Action):
    """A parameterised question about one entity, its parameters from the query string (as
    text, a '+' of a zone put back) or typed (MCP), validated by the question's ``Query``."""

    path_ids = {"id": "entry_id"}
    Query: ClassVar[type] = QuestionQuery

    @classmethod
    def given(cls, query) -> dict:
        allowed = set(cls.Query().fields)
        if hasattr(query, "getlist"):
            return clean_query(query, allowed)
        reject_unknown(dict(query), allowed)
        return {k: v for k, v in query.items() if v is not None}

    @classmethod
    def clean(cls, query, body) -> dict:
        return coded(cls.Query, cls.given(query))

    def question(self) -> tuple:
        """The entity and the clocks and limits every question takes."""
        entity = find_entry(self.bank, self.ids["id"])
        limits = Limits(**{k: v for k, v in self.data.items() if k.startswith("max_")})
        return entity, {
            "limits": limits,
            "valid_at": self.data.get("valid_at"),
            "as_of": self.data.get("as_of"),
        }


class DependentsOf(EntityQuestion):
    """Who depends on an entity (depends_on, inbound, up to depth hops)."""

    name = "entities.dependents"
    summary = "Who depends on an entity (depends_on, inbound, up to depth hops)"
    Query = DependentsQuery

    def execute(self):
        entity, clocks = self.question()
        return questions.dependents_of(self.bank, entity, self.data["depth"], **clocks)

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

    @classmethod
    def clean(cls, query, body) -> dict:
        # The interval's values are history.changed_between's (it reads the text).
        return cls.given(query)

    def execute(self):
        entity = find_entry(self.bank, self.ids["id"])
        return history.changed_between(
            self.bank, entity, self.data.get("from"), self.data.get("to")
        )

    def present(self, report) -> dict:
        return report.as_json()


class CorrectEdges(CodedAction):
    """Close old beliefs and append corrected versions, as one operation."""

    name = "edges.correct"
    summary = "Correct edges: close old beliefs, append corrected versions (one operation)"
    scope = Scope.WRITE
    Input = CorrectionRequestSerializer
    # The fields refuse with the codes the corrections answered before (a reason that is
    # not text is reason_required, as a blank one is).

    def execute(self) -> dict:
        return correct_edges(
            self.bank,
            self.data["close"],
            self.data["append"],
            self.data["reason"],
            actor=self.caller.actor,
        )
