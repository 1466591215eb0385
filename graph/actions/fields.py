"""Declared fields whose refusal keeps the code and message the services (and API.md) name,
so declaring a field in an action's input does not change the contract's error codes."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.fields import empty

from kb.api.params import refuse_unknown, unknown_fields
from kb.api.schemas import NonBlankField
from kb.errors import InvalidInput, KbError


class CodedErrors:
    """Mixin: a refused value raises ``InvalidInput(message, code)`` naming the field."""

    def __init__(self, *args, error_code: str, error_message: str, **kwargs):
        self.error_code, self.error_message = error_code, error_message
        super().__init__(*args, **kwargs)

    def run_validation(self, data=empty):
        try:
            return super().run_validation(data)
        except serializers.ValidationError as exc:
            detail = exc.detail[0] if isinstance(exc.detail, list) and exc.detail else exc.detail
            raise InvalidInput(
                self.error_message,
                code=self.error_code,
                fields={self.field_name: str(detail)},
            ) from None


class CodedChoiceField(CodedErrors, serializers.ChoiceField):
    """A choice refused with the service's code (``invalid_decision``…)."""


class ReasonField(CodedErrors, NonBlankField):
    """A required reason: missing or blank answers ``reason_required``, as the services do."""

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", "Why (kept on the operation).")
        super().__init__(
            error_code="reason_required", error_message="A reason is required.", **kwargs
        )


def named_fields_only(serializer_class, body) -> dict:
    """``body`` as given, once every field it names is one the declaration names (at any
    depth); 400 ``invalid_body`` for anything but an object."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise KbError("The body must be a JSON object.", code="invalid_body")
    refuse_unknown(unknown_fields(serializer_class(), body))
    return dict(body)
