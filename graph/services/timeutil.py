"""Parsing the two clocks' inputs: valid time (date or timestamp) and transaction time."""

from __future__ import annotations

import datetime as dt

from kb.errors import InvalidInput


def parse_instant(value, field: str, *, require_zone: bool = False) -> dt.datetime | None:
    """A date (midnight UTC) or an ISO 8601 timestamp; None passes through."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        parsed = value
    elif isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    elif isinstance(value, str):
        text = value.strip()
        try:
            if len(text) == 10:
                day = dt.date.fromisoformat(text)
                return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
            parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInput(
                f"{field} must be a date (YYYY-MM-DD) or an ISO 8601 timestamp.",
                code="invalid_time",
                fields={field: "Not a date or timestamp."},
            ) from None
    else:
        raise InvalidInput(
            f"{field} must be a string.", code="invalid_time", fields={field: "Must be a string."}
        )
    if parsed.tzinfo is None:
        if require_zone:
            raise InvalidInput(
                f"{field} must carry a time zone (e.g. 2026-05-03T00:00:00Z).",
                code="invalid_time",
                fields={field: "Needs a time zone."},
            )
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed
