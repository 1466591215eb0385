"""The traverse body and the entity questions' parameters, declared once.

These serializers validate — types, bounds, the ``steps``-or-``relations`` rule, defaults —
with the codes API.md names (``invalid_start``, ``invalid_steps``, ``invalid_relations``,
``invalid_direction``, ``invalid_limit``, ``invalid_time``, ``invalid_kinds``), and the
OpenAPI operations and the MCP ``traverse`` tool are generated from them. What needs the bank
(its relations and kinds, resolving the start) is :mod:`graph.traversal.requests`.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from graph.actions.fields import CodedErrors
from graph.edges.clocks import parse_instant
from graph.traversal.walk import (
    DEFAULT_DEPTH,
    DIRECTIONS,
    MAX_DEPTH,
    MAX_EVIDENCE_TOKENS,
    MAX_EXPANSIONS,
    MAX_PATHS,
    MAX_RELATIONS_PER_STEP,
    Limits,
    Step,
)
from kb.api import schemas
from kb.api.openapi import schema_keywords
from kb.api.schemas import InstantField, KindField, RelationField
from kb.errors import InvalidInput

DEFAULTS = Limits()
START_CHARS = 300
START_WAYS = ("id", "key", "name")
MAX_KINDS = 100


class LimitField(CodedErrors, serializers.IntegerField):
    """A walk ceiling: a whole number in [min_value, max_value] given as a JSON integer (in a
    query string, ``from_text``: the text of one). Else 400 ``invalid_limit``."""

    def __init__(self, low: int, high: int, *, from_text: bool = False, **kwargs):
        kwargs.setdefault("required", False)
        self.from_text = from_text
        super().__init__(
            min_value=low,
            max_value=high,
            error_code="invalid_limit",
            error_message=f"{{name}} must be a whole number from {low} to {high:,}.",
            error_detail=f"A whole number from {low} to {high}.",
            **kwargs,
        )

    def to_internal_value(self, data):
        if self.from_text and isinstance(data, str) and data.strip().lstrip("-").isdigit():
            data = int(data)  # query parameters arrive as text
        if isinstance(data, bool) or not isinstance(data, int):
            self.refuse()
        if not self.min_value <= data <= self.max_value:
            self.refuse()
        return data


class ClockMixin:
    """A time: a date or an ISO 8601 timestamp (``require_zone``: a timestamp with a zone),
    parsed by :func:`graph.edges.clocks.parse_instant` (400 ``invalid_time``), the one rule."""

    def __init__(self, *args, require_zone: bool = False, **kwargs):
        self.require_zone = require_zone
        super().__init__(*args, **kwargs)

    def run_validation(self, data=empty):
        if data is empty or data is None:
            return super().run_validation(data)  # required, default and null as declared
        return parse_instant(data, self.field_name, require_zone=self.require_zone)


class ClockField(ClockMixin, InstantField):
    """A date or a timestamp (``valid_at``)."""


class TimestampField(ClockMixin, serializers.DateTimeField):
    """A timestamp with a zone (``as_of``)."""

    def __init__(self, **kwargs):
        super().__init__(require_zone=True, **kwargs)


class RelationNamesField(CodedErrors, serializers.ListField):
    """A non-empty list of relation names (each stripped, duplicates dropped); 400
    ``invalid_relations``. Whether the bank has them is the bank's vocabulary's question."""

    def __init__(self, **kwargs):
        super().__init__(
            child=RelationField(),
            min_length=1,
            max_length=MAX_RELATIONS_PER_STEP,
            error_code="invalid_relations",
            error_message="{name} must be a non-empty list of relation names.",
            error_detail="A non-empty list of relation names.",
            required_message="{name} must be a non-empty list of relation names.",
            **kwargs,
        )

    def to_internal_value(self, data):
        if not isinstance(data, list) or not 1 <= len(data) <= MAX_RELATIONS_PER_STEP:
            self.refuse()
        if not all(isinstance(name, str) and name.strip() for name in data):
            self.refuse()
        return tuple(dict.fromkeys(name.strip() for name in data))


class DirectionField(CodedErrors, serializers.ChoiceField):
    """``out``, ``in`` or ``both`` (null: ``out``); else 400 ``invalid_direction``."""

    def __init__(self, **kwargs):
        super().__init__(
            choices=DIRECTIONS,
            required=False,
            allow_null=True,
            error_code="invalid_direction",
            error_message=f"{{name}} must be one of {', '.join(DIRECTIONS)}.",
            error_detail="out, in or both.",
            **kwargs,
        )


class TraverseStepSerializer(serializers.Serializer):
    relations = RelationNamesField()
    direction = DirectionField(help_text="out (default), in, both.")


def _refuse_steps(message: str, detail: str):
    raise InvalidInput(message, code="invalid_steps", fields={"steps": detail})


class StepsField(serializers.ListField):
    """One allow-list per hop (1 to MAX_DEPTH): a list of :class:`Step`; 400
    ``invalid_steps``, or the step field's own code naming ``steps[i].<field>``."""

    def __init__(self, **kwargs):
        super().__init__(
            child=TraverseStepSerializer(), min_length=1, max_length=MAX_DEPTH, **kwargs
        )

    def to_internal_value(self, data):
        if not isinstance(data, list) or not 1 <= len(data) <= MAX_DEPTH:
            _refuse_steps(
                f"steps must be a list of 1 to {MAX_DEPTH} hops.", f"1 to {MAX_DEPTH} hops."
            )
        steps = []
        for i, item in enumerate(data):
            if not isinstance(item, dict):
                _refuse_steps(
                    f'steps[{i}] must be {{"relations": [...], "direction": "out" | "in" | "both"}}.',
                    f"Item {i} is malformed.",
                )
            try:
                hop = self.child.run_validation(item)
            except InvalidInput as exc:
                where = f"steps[{i}]."
                fields = {where + name: text for name, text in exc.fields.items()}
                raise InvalidInput(where + exc.message, code=exc.code, fields=fields) from None
            steps.append(Step(hop["relations"], hop.get("direction") or "out"))
        return steps


def _start_text(value) -> bool:
    return isinstance(value, str) and bool(value.strip()) and len(value) <= START_CHARS


_START_TEXT = {"type": "string", "pattern": schemas.NONBLANK, "maxLength": START_CHARS}


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
                for how in START_WAYS
            ),
        ]
    }
)
class StartField(CodedErrors, serializers.JSONField):
    """An entry id, or one of {"id"}, {"key"}, {"name"}: ``(way, text)``; 400
    ``invalid_start``."""

    def __init__(self, **kwargs):
        super().__init__(
            error_code="invalid_start",
            error_message='{name} must be an entry id, {{"key": "..."}} or {{"name": "..."}}.',
            error_detail="An id, {{key}} or {{name}}.",
            required_message="{name} is required.",
            **kwargs,
        )

    def to_internal_value(self, data):
        if isinstance(data, str):
            data = {"id": data}
        if not isinstance(data, dict) or len(data) != 1:
            self.refuse()
        ((how, text),) = data.items()
        if how not in START_WAYS or not _start_text(text):
            self.refuse()
        return how, text.strip()


class KindNamesField(CodedErrors, serializers.ListField):
    """A non-empty list of entry kind names, or null (every kind); 400 ``invalid_kinds``."""

    def __init__(self, **kwargs):
        super().__init__(
            child=KindField(),
            required=False,
            allow_null=True,
            min_length=1,
            max_length=MAX_KINDS,
            error_code="invalid_kinds",
            error_message="{name} must be a non-empty list of entry kind names.",
            error_detail="A list of kind names.",
            **kwargs,
        )

    def to_internal_value(self, data):
        if not isinstance(data, list) or not 1 <= len(data) <= MAX_KINDS:
            self.refuse()
        if not all(isinstance(name, str) for name in data):
            self.refuse()
        return sorted(set(data))


def _body_limit(low: int, high: int, default: int | None = None):
    kwargs = {"default": default} if default is not None else {}
    return LimitField(low, high, allow_null=True, **kwargs)


LIMIT_NAMES = ("max_depth", "max_expansions", "max_paths", "max_evidence_tokens")


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
    steps = StepsField(required=False, allow_null=True, help_text="One allow-list per hop.")
    relations = RelationNamesField(
        required=False, allow_null=True, help_text="Same allow-list every hop."
    )
    direction = DirectionField(help_text="With relations only.")
    max_depth = _body_limit(1, MAX_DEPTH)
    max_expansions = _body_limit(1, MAX_EXPANSIONS, DEFAULTS.max_expansions)
    max_paths = _body_limit(1, MAX_PATHS, DEFAULTS.max_paths)
    max_evidence_tokens = _body_limit(0, MAX_EVIDENCE_TOKENS, DEFAULTS.max_evidence_tokens)
    valid_at = ClockField(required=False, allow_null=True)
    as_of = TimestampField(required=False, allow_null=True)
    kinds = KindNamesField(
        help_text="Allow-list of entry kinds the walk may reach (the start is exempt)."
    )

    def validate(self, attrs: dict) -> dict:
        has_steps = attrs.get("steps") is not None
        if has_steps == (attrs.get("relations") is not None):
            raise InvalidInput(
                "Give either steps (one allow-list per hop) or relations + direction + max_depth.",
                code="invalid_steps",
                fields={
                    "steps": "Either steps or relations.",
                    "relations": "Either steps or relations.",
                },
            )
        if has_steps and attrs.get("direction") is not None:
            raise InvalidInput(
                "direction belongs inside each step when steps are given.",
                code="invalid_steps",
                fields={"direction": "Put it in each step."},
            )
        # A null limit is its default; a walk by relations goes DEFAULT_DEPTH hops unless told.
        for name in LIMIT_NAMES:
            if attrs.get(name) is None:
                attrs[name] = getattr(DEFAULTS, name)
        if attrs["max_depth"] is None and not has_steps:
            attrs["max_depth"] = DEFAULT_DEPTH
        return attrs

    def limits(self) -> Limits:
        return Limits(**{name: self.validated_data[name] for name in LIMIT_NAMES})


def _query_limit(low: int, high: int, default: int | None, description: str):
    return LimitField(low, high, from_text=True, default=default, help_text=description)


class QuestionQuery(serializers.Serializer):
    """The clocks and limits every entity question takes, from the query string."""

    valid_at = ClockField(
        required=False, allow_blank=True, help_text="Valid time: a date or timestamp (default now)."
    )
    as_of = TimestampField(
        required=False,
        help_text="Transaction time: an ISO 8601 timestamp with a zone (default now).",
    )
    max_expansions = _query_limit(
        1, MAX_EXPANSIONS, DEFAULTS.max_expansions, "Edge records read, at most."
    )
    max_paths = _query_limit(1, MAX_PATHS, DEFAULTS.max_paths, "Paths returned, at most.")
    max_evidence_tokens = _query_limit(
        0,
        MAX_EVIDENCE_TOKENS,
        DEFAULTS.max_evidence_tokens,
        "Approximate tokens of notes and evidence.",
    )


class DependentsQuery(QuestionQuery):
    depth = _query_limit(1, MAX_DEPTH, DEFAULT_DEPTH, "Hops of depends_on to follow inbound.")
