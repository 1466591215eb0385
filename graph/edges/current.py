"""The one "current edge" rule, in the three languages the code needs it in.

An edge is *current* at instant ``t`` when it is still believed (its transaction interval is
open: ``invalidated_at`` is null) and its valid interval — half-open ``[valid_from, valid_to)``,
a null bound meaning unbounded — contains ``t``.

- :func:`current_edge_sql`: the raw-SQL predicate for an alias and an instant parameter, for
  statements written by hand (statistics, PPR, facts, the fold).
- :func:`current_q`: the same predicate as an ORM ``Q`` (:func:`valid_q` is its valid-time half).
- :func:`edge_is_current`: the same predicate over plain values (``Edge.is_current``).

``tests/graph/test_current_edge.py`` checks on random edges and instants, boundaries included,
that all three select the same rows. Change the rule here and nowhere else. Imports nothing
from the models, so the models can use it.
"""

from __future__ import annotations

import datetime as dt
import re

from django.db.models import Q
from django.utils import timezone

_ALIAS = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A parameter placeholder (%s or %(name)s), never a value spliced into the SQL.
_PLACEHOLDER = re.compile(r"^%(\([A-Za-z_][A-Za-z0-9_]*\))?s$")


def current_edge_sql(alias: str = "e", at: str = "%(now)s") -> str:
    """The SQL predicate "the ``graph_edge`` row ``alias`` is current at the parameter ``at``".

    ``at`` is the placeholder the statement binds the instant to (``%(now)s`` by default,
    or ``%s``); the caller passes the instant in its parameters."""
    if not _ALIAS.match(alias):
        raise ValueError(f"Not an SQL alias: {alias!r}.")
    if not _PLACEHOLDER.match(at):
        raise ValueError(f"Not a parameter placeholder: {at!r} (use %s or %(name)s).")
    return (
        f"{alias}.invalidated_at IS NULL"
        f" AND ({alias}.valid_from IS NULL OR {alias}.valid_from <= {at})"
        f" AND ({alias}.valid_to IS NULL OR {alias}.valid_to > {at})"
    )


def valid_q(at: dt.datetime, prefix: str = "") -> Q:
    """The ORM predicate "the half-open valid interval ``[valid_from, valid_to)`` contains
    ``at``" (the valid-time half of the rule, for queries that pick their own belief time)."""
    return (Q(**{f"{prefix}valid_from__isnull": True}) | Q(**{f"{prefix}valid_from__lte": at})) & (
        Q(**{f"{prefix}valid_to__isnull": True}) | Q(**{f"{prefix}valid_to__gt": at})
    )


def current_q(now: dt.datetime | None = None, prefix: str = "") -> Q:
    """The ORM predicate "current at ``now``" (default: the present) on the edge reached
    through ``prefix`` (e.g. ``"edges_out__"``)."""
    now = now or timezone.now()
    return Q(**{f"{prefix}invalidated_at__isnull": True}) & valid_q(now, prefix)


def edge_is_current(
    invalidated_at: dt.datetime | None,
    valid_from: dt.datetime | None,
    valid_to: dt.datetime | None,
    now: dt.datetime | None = None,
) -> bool:
    """The Python predicate "current at ``now``" over an edge's three time columns."""
    now = now or timezone.now()
    return (
        invalidated_at is None
        and (valid_from is None or valid_from <= now)
        and (valid_to is None or now < valid_to)
    )
