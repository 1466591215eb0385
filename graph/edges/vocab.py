"""The relation vocabulary of a bank: core edge types plus the bank's own."""

from __future__ import annotations

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
