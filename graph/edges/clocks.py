"""The two clocks: parsing their inputs (valid time as a date or timestamp, transaction time)
and the one definition of valid-interval overlap, in Python and as a query filter."""

from __future__ import annotations

import datetime as dt

from django.db.models import Q

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
    try:
        # In UTC: PostgreSQL refuses offsets past ±15:59 that ISO 8601 allows (up to ±23:59).
        return parsed.astimezone(dt.UTC)
    except OverflowError:
        raise InvalidInput(
            f"{field} is out of range (years 1 to 9999 in UTC).",
            code="invalid_time",
            fields={field: "Out of range."},
        ) from None


def intervals_overlap(a_from, a_to, b_from, b_to) -> bool:
    """Do the half-open valid intervals [a_from, a_to) and [b_from, b_to) overlap? None is
    unbounded. The one overlap rule of the graph; :func:`overlapping_q` is its SQL twin."""
    return (a_to is None or b_from is None or b_from < a_to) and (
        b_to is None or a_from is None or a_from < b_to
    )


def overlapping_q(valid_from, valid_to, prefix: str = "") -> Q:
    """Rows whose valid interval overlaps [valid_from, valid_to) (the rule of
    :func:`intervals_overlap`, as a filter on ``valid_from``/``valid_to``)."""
    q = Q()
    if valid_to is not None:
        q &= Q(**{f"{prefix}valid_from__isnull": True}) | Q(**{f"{prefix}valid_from__lt": valid_to})
    if valid_from is not None:
        q &= Q(**{f"{prefix}valid_to__isnull": True}) | Q(**{f"{prefix}valid_to__gt": valid_from})
    return q
