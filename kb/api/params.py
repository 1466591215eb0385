"""Input checks every view shares: unknown fields, validated bodies, integer query params."""

from __future__ import annotations

from collections.abc import Iterable

from kb.api.errors import ApiError


def reject_unknown(body: dict, allowed: Iterable[str]) -> None:
    """400 ``invalid_input`` naming every field of ``body`` that is not ``allowed``."""
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise ApiError(
            400,
            "invalid_input",
            f"Unknown fields: {', '.join(unknown)}.",
            dict.fromkeys(unknown, "Unknown field."),
        )


def validated(serializer_class, body: dict) -> dict:
    """``body`` checked by a DRF serializer, refusing fields the serializer does not know."""
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


def int_param(request, name: str, default: int, low: int, high: int) -> int:
    """An integer query parameter in [low, high] (``default`` when absent)."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
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
