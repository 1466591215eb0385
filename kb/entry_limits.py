"""How large an entry's fields may be: declared once, here.

The model's column sizes, the service's validation (:func:`kb.services.entries.clean_entry_data`,
which every write path calls: REST, MCP, import lines, admin forms, split), and the OpenAPI
schema's ``maxLength`` / ``maxItems`` all read :data:`DEFAULT_LIMITS`. A bank may set its own
limits in its settings (``{"entry_limits": {"content": 40000, "tasks": 20}}``): lower or higher
than the defaults, but never above :data:`HARD_LIMITS` (the database column's size for the short
texts, a sane ceiling for the rest). Over a limit, a write answers **400** ``too_long`` naming
the field and the limit.
"""

from __future__ import annotations

from dataclasses import dataclass

# Characters for a text field; for a list field, the number of items (each item has its own
# character limit in ITEM_CHARS). ``steps`` counts each step as its JSON text.
DEFAULT_LIMITS: dict[str, int] = {
    "title": 300,
    "summary": 500,
    "useful_for": 500,
    "key": 200,
    "content": 20_000,
    "systems": 30,
    "tasks": 30,
    "anchor_files": 100,
    "anchor_symbols": 100,
    "steps": 100,
}
ITEM_CHARS: dict[str, int] = {
    "systems": 100,
    "tasks": 200,
    "anchor_files": 500,
    "anchor_symbols": 300,
    "steps": 2_000,
}
# Column sizes (title, summary, useful_for, key are varchar) and ceilings no bank may pass.
HARD_LIMITS: dict[str, int] = {
    **DEFAULT_LIMITS,
    "content": 200_000,
    "systems": 200,
    "tasks": 200,
    "anchor_files": 1_000,
    "anchor_symbols": 1_000,
    "steps": 500,
}
LIST_FIELDS = frozenset(ITEM_CHARS)
# What a limit is called in the API: anchors are one object with two lists.
API_NAMES = {"anchor_files": "anchors.files", "anchor_symbols": "anchors.symbols"}
SETTING = "entry_limits"


@dataclass(frozen=True)
class EntryLimits:
    """The limits in force for one bank (defaults, overridden by the bank's settings)."""

    chars: dict[str, int]

    def limit(self, field: str) -> int:
        return self.chars[field]

    def item_chars(self, field: str) -> int:
        return ITEM_CHARS[field]


def limits_for(bank) -> EntryLimits:
    """The bank's limits: :data:`DEFAULT_LIMITS` overridden by ``settings.entry_limits``
    (positive whole numbers, each capped at :data:`HARD_LIMITS`; anything else is ignored)."""
    merged = dict(DEFAULT_LIMITS)
    overrides = ((getattr(bank, "settings", None) or {}) if bank is not None else {}).get(SETTING)
    if isinstance(overrides, dict):
        for name, value in overrides.items():
            if name in merged and isinstance(value, int) and not isinstance(value, bool):
                if value > 0:
                    merged[name] = min(value, HARD_LIMITS[name])
    return EntryLimits(merged)


def too_long_message(field: str, limit: int, got: int, *, items: bool = False) -> str:
    """The sentence naming the field and its limit (``fields`` value of a ``too_long``)."""
    unit = "items" if items else "characters"
    return f"{API_NAMES.get(field, field)} must be at most {limit} {unit} (got {got})."


def item_too_long_message(field: str, limit: int, index: int, got: int) -> str:
    return f"{API_NAMES.get(field, field)}[{index}] must be at most {limit} characters (got {got})."
