"""Input checks every view shares: unknown fields, validated bodies, integer query params."""

from __future__ import annotations

from collections.abc import Iterable

from rest_framework import serializers

from kb.api.errors import ApiError
from kb.inputs import single_param


def refuse_unknown(unknown: list[str], code: str = "invalid_input") -> None:
    """400 ``code`` naming every field path of ``unknown`` (nothing when it is empty)."""
    if unknown:
        raise ApiError(
            400,
            code,
            f"Unknown fields: {', '.join(unknown)}.",
            dict.fromkeys(unknown, "Unknown field."),
        )


def reject_unknown(body: dict, allowed: Iterable[str]) -> None:
    """400 ``invalid_input`` naming every field of ``body`` that is not ``allowed``."""
    refuse_unknown(sorted(set(body) - set(allowed)))


def _type_error(path: str, expected: str) -> ApiError:
    return ApiError(
        400, "invalid_input", f"{path} must be {expected}.", {path: f"Must be {expected}."}
    )


def strict_types(serializer, data, path: str = "") -> None:
    """Refuse what DRF would coerce: ``"true"`` or ``1`` for a boolean, ``5`` for a string,
    ``"5"`` or ``true`` for an integer. The schema says the JSON type; the server holds to it."""
    if not isinstance(data, dict):
        raise _type_error(path or "body", "an object")
    for name, field in serializer.fields.items():
        if name not in data or field.read_only:
            continue
        value, where = data[name], f"{path}.{name}" if path else name
        if value is None:
            if not getattr(field, "allow_null", False):
                raise _type_error(where, "present (not null)")
            continue
        if isinstance(field, serializers.BooleanField) and not isinstance(value, bool):
            raise _type_error(where, "true or false")
        if isinstance(field, serializers.CharField | serializers.ChoiceField) and not isinstance(
            value, str
        ):
            raise _type_error(where, "a string")
        if isinstance(field, serializers.IntegerField) and (
            not isinstance(value, int) or isinstance(value, bool)
        ):
            raise _type_error(where, "a whole number")
        if isinstance(field, serializers.FloatField) and (
            not isinstance(value, int | float) or isinstance(value, bool)
        ):
            raise _type_error(where, "a number")
        if isinstance(field, serializers.DictField) and not isinstance(value, dict):
            raise _type_error(where, "an object")
        if isinstance(field, serializers.ListField | serializers.ListSerializer):
            if not isinstance(value, list):
                raise _type_error(where, "a list")
            child = getattr(field, "child", None)
            for index, item in enumerate(value):
                if isinstance(child, serializers.Serializer):
                    strict_types(child, item, f"{where}[{index}]")
                elif isinstance(child, serializers.CharField) and not isinstance(item, str):
                    raise _type_error(f"{where}[{index}]", "a string")
        elif isinstance(field, serializers.Serializer):
            strict_types(field, value, where)


def unknown_fields(serializer, data, path: str = "") -> list[str]:
    """Paths of the fields of ``data`` that ``serializer`` (and its nested serializers) do not
    name: ``["note", "anchors.extra", "connections[1].weight"]``."""
    if not isinstance(data, dict):
        return []
    fields = serializer.fields
    found = []
    for name, value in data.items():
        where = f"{path}.{name}" if path else str(name)
        field = fields.get(name)
        if field is None or field.read_only:
            found.append(where)
        elif isinstance(field, serializers.ListSerializer | serializers.ListField) and (
            isinstance(value, list) and isinstance(field.child, serializers.Serializer)
        ):
            for index, item in enumerate(value):
                found += unknown_fields(field.child, item, f"{where}[{index}]")
        elif isinstance(field, serializers.Serializer):
            found += unknown_fields(field, value, where)
    return found


_DOCUMENTED: dict[tuple[type, str], object] = {}


def documented_request(view, method: str):
    """The request serializer the view's OpenAPI operation documents for ``method`` (its
    ``extend_schema(request=…)``), or None when it documents no serializer."""
    key = (type(view), method.upper())
    if key not in _DOCUMENTED:
        handler = getattr(type(view), method.lower(), None)
        inspector_class = getattr(handler, "kwargs", {}).get("schema")
        serializer = None
        if inspector_class is not None and hasattr(inspector_class, "get_request_serializer"):
            inspector = inspector_class()
            inspector.view = view
            inspector.method = method.upper()
            candidate = inspector.get_request_serializer()
            if isinstance(candidate, type) and issubclass(candidate, serializers.Serializer):
                serializer = candidate()
            elif isinstance(candidate, serializers.Serializer):
                serializer = candidate
        _DOCUMENTED[key] = serializer
    return _DOCUMENTED[key]


def reject_undocumented(view, request, body: dict) -> None:
    """400 ``invalid_input`` naming every field of ``body``, at any depth, that the operation's
    documented request body does not have. The schema marks those bodies
    ``additionalProperties: false`` (``kb.api.openapi``): one serializer says both."""
    serializer = documented_request(view, request.method)
    if serializer is None:
        return
    # A view whose service names its own code for a bad field keeps it (API.md: entries
    # answer invalid_entry), so the contract's codes do not change.
    refuse_unknown(
        unknown_fields(serializer, body), getattr(view, "unknown_field_code", "invalid_input")
    )


_DECLARED: dict[type, serializers.Serializer] = {}


def declared(serializer_class) -> serializers.Serializer:
    """One unbound instance of ``serializer_class`` per class, for reading its declared fields
    (names, types, nullability: :func:`unknown_fields`, :func:`strict_types`), never for
    validating. DRF deep-copies every declared field for each new instance; a request's input
    check made three of them, this keeps the one that validates."""
    found = _DECLARED.get(serializer_class)
    if found is None:
        found = _DECLARED.setdefault(serializer_class, serializer_class())
    return found


def validated(serializer_class, body: dict) -> dict:
    """``body`` checked by a DRF serializer with strict JSON types, refusing fields the
    serializer does not know."""
    strict_types(declared(serializer_class), body)
    serializer = serializer_class(data=body)
    serializer.is_valid(raise_exception=True)
    reject_unknown(body, serializer.fields)
    return serializer.validated_data


def query_text(data: dict, field: str = "query") -> str:
    text = data[field].strip()
    if not text:
        raise ApiError(
            400, "invalid_input", f"{field} must not be blank.", {field: "Must not be blank."}
        )
    return text


def whole_number_in(name: str, raw, low: int, high: int) -> int:
    """``raw`` (a JSON integer or the text of one) as a whole number in [low, high], else 400
    ``invalid_input`` "<name> must be a whole number from <low> to <high>."."""
    value = low - 1
    if isinstance(raw, int | str) and not isinstance(raw, bool):
        try:
            value = int(raw)
        except ValueError:
            value = low - 1
    if not low <= value <= high:
        raise ApiError(
            400,
            "invalid_input",
            f"{name} must be a whole number from {low} to {high}.",
            {name: f"Between {low} and {high}."},
        )
    return value


def int_param(request, name: str, default: int, low: int, high: int) -> int:
    """An integer query parameter in [low, high] (``default`` when absent). Given twice, or
    given empty, it is not a whole number: 400, as the schema (one integer) says."""
    raw = single_param(request.query_params, name)
    if raw is None:
        return default
    return whole_number_in(name, raw, low, high)


def int_query(name: str, default: int, low: int, high: int, description: str = ""):
    """The OpenAPI parameter of an :func:`int_param` with its bounds, so that the schema says
    exactly what the view accepts (use the same numbers in both places)."""
    from drf_spectacular.utils import OpenApiParameter

    schema = {"type": "integer", "minimum": low, "maximum": high, "default": default}
    return OpenApiParameter(name, schema, description=description or f"{low}–{high}.")
