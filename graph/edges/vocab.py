"""The relation vocabulary of a bank: core edge types plus the bank's own."""

from __future__ import annotations

from django.db import connection
from django.db.models import Q

from graph.models import EdgeType
from kb.errors import InvalidInput
from kb.models import Bank


def edge_types_for_bank(bank: Bank) -> dict[str, EdgeType]:
    """The bank's vocabulary in one statement: core relations, overridden by the bank's own."""
    rows = EdgeType.objects.filter(Q(bank__isnull=True) | Q(bank_id=bank.pk))
    types: dict[str, EdgeType] = {}
    for etype in sorted(rows, key=lambda t: t.bank_id is not None):  # the bank's own win
        types[etype.name] = etype
    return types


def relation_ids_for_bank(bank: Bank) -> dict[str, int]:
    """Name → id of the bank's vocabulary, as :func:`edge_types_for_bank` resolves it (the
    bank's own win over the core), read as bare pairs: a walk needs no more, and building the
    model rows cost it a millisecond."""
    table = connection.ops.quote_name(EdgeType._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT name, id FROM {table} WHERE bank_id IS NULL OR bank_id = %s "
            "ORDER BY bank_id NULLS FIRST",
            [bank.pk],
        )
        return dict(cursor.fetchall())  # later pairs (the bank's own) replace earlier ones


def edge_type(bank: Bank, name: str, types: dict[str, EdgeType] | None = None) -> EdgeType:
    types = types if types is not None else edge_types_for_bank(bank)
    if not isinstance(name, str) or name not in types:
        raise InvalidInput(
            f"Unknown relation {name!r}; known relations: {', '.join(sorted(types))} "
            "(or use 'other' with a 'label').",
            code="unknown_relation",
            fields={"relation": "Unknown relation."},
        )
    return types[name]
