"""What PostgreSQL did with a statement: ``EXPLAIN (ANALYZE, FORMAT JSON)`` and its nodes."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.db import connection


def analyzed_plan(sql: str, params) -> dict:
    """The root node of ``sql`` run under ``EXPLAIN (ANALYZE, FORMAT JSON)``."""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return plan[0]["Plan"]


def plan_nodes(plan: dict) -> Iterator[dict]:
    """Every node of the plan, the root first."""
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def indexes_read(plan: dict) -> set[str]:
    """The indexes the plan's nodes read at least once."""
    return {
        n["Index Name"] for n in plan_nodes(plan) if "Index Name" in n and n.get("Actual Loops")
    }
