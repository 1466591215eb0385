"""The relation vocabulary of a bank: core edge types plus the bank's own."""

from __future__ import annotations

from graph.models import EdgeType
from kb.errors import InvalidInput
from kb.models import Bank


def edge_types_for_bank(bank: Bank) -> dict[str, EdgeType]:
    types = {t.name: t for t in EdgeType.objects.filter(bank__isnull=True)}
    types.update({t.name: t for t in EdgeType.objects.filter(bank=bank)})
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
