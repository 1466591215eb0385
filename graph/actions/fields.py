"""Declared fields whose refusal keeps the code and message the services (and API.md) name,
so declaring a field in an action's input does not change the contract's error codes."""

from __future__ import annotations

from typing import NoReturn

from rest_framework import serializers
from rest_framework.fields import empty

from kb.actions.base import Action
from kb.api.params import refuse_unknown, unknown_fields
from kb.api.schemas import NonBlankField
from kb.errors import InvalidInput, KbError


class CodedErrors:
    """Mixin: a refused value raises ``InvalidInput(message, code)`` naming the field.

    ``error_message`` (and ``error_detail``, the text under ``fields``; DRF's own sentence when
    not given) may say ``{name}``, the field's name; ``required_message`` is the message when a
    required field is missing (detail "Required."). A subclass's ``to_internal_value`` refuses
    with :meth:`refuse`, so every refusal of the field carries its code."""

    def __init__(
        self,
        *args,
        error_code: str,
        error_message: str,
        error_detail: str | None = None,
        required_message: str | None = None,
        **kwargs,
    ):
        self.error_code, self.error_message = error_code, error_message
        self.error_detail, self.required_message = error_detail, required_message
        super().__init__(*args, **kwargs)

    def refuse(self, detail: str | None = None) -> NoReturn:
        name = self.field_name
        raise InvalidInput(
            self.error_message.format(name=name),
            code=self.error_code,
            fields={name: (self.error_detail or detail or "Invalid.").format(name=name)},
        )

    def run_validation(self, data=empty):
        if data is empty and self.required and self.required_message:
            name = self.field_name
            raise InvalidInput(
                self.required_message.format(name=name),
                code=self.error_code,
                fields={name: "Required."},
            )
        try:
            return super().run_validation(data)
        except serializers.ValidationError as exc:
            detail = exc.detail[0] if isinstance(exc.detail, list) and exc.detail else exc.detail
            self.refuse(str(detail))


class CodedChoiceField(CodedErrors, serializers.ChoiceField):
    """A choice refused with the service's code (``invalid_decision``…)."""


class ReasonField(CodedErrors, NonBlankField):
    """A required reason: missing or blank answers ``reason_required``, as the services do."""

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", "Why (kept on the operation).")
        super().__init__(
            error_code="reason_required", error_message="A reason is required.", **kwargs
        )

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.refuse("Must be a string.")
        return super().to_internal_value(data)


def named_fields_only(serializer_class, body) -> dict:
    """``body`` as given, once every field it names is one the declaration names (at any
    depth); 400 ``invalid_body`` for anything but an object."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise KbError("The body must be a JSON object.", code="invalid_body")
    refuse_unknown(unknown_fields(serializer_class(), body))
    return dict(body)


def coded(serializer_class, data: dict) -> dict:
    """``data`` validated by a declaration whose fields refuse with their own codes (and
    types: they take no coercion), as one plain dict."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class CodedAction(Action):
    """An action whose body is checked by its declaration alone: unknown fields (at any depth)
    first, then the declaration's fields with their own error codes and strict types
    (:func:`coded`). It reads no query string."""

    @classmethod
    def clean(cls, query, body) -> dict:
        return coded(cls.Input, named_fields_only(cls.Input, body))
