"""Extension points of kb that other apps fill in (the graph app, in ``GraphConfig.ready``).

kb never imports graph. Instead, each hook kb can call is a named slot of :data:`registry`,
filled once by the app that owns the behaviour, the same shape as the import ``LineType``
registry of :mod:`kb.services.bulk`. An empty slot means "not installed": callers ask
:meth:`Registry.get` and answer ``not_supported_yet`` rather than guess.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# The slots kb knows about. Adding one: name it here, document who fills it and with what.
CONNECTION_LINKER = "connection_linker"  # (bank, entry, connections) -> list[Edge]
ENTRY_DELETER = "entry_deleter"  # (bank, ref, reason, *, actor) -> delete result
ENTRY_AS_OF = "entry_as_of"  # API layer: (bank, ref, query_params) -> entry JSON as of a time
SLOTS = (CONNECTION_LINKER, ENTRY_DELETER, ENTRY_AS_OF)


@dataclass
class Registry:
    """Named single-function hooks, plus the ordered list of entry-detail extensions."""

    hooks: dict[str, Callable[..., Any]] = field(default_factory=dict)
    detail_extensions: list[Callable[[Any, dict], None]] = field(default_factory=list)

    def register(self, slot: str, func: Callable[..., Any]) -> None:
        if slot not in SLOTS:
            raise KeyError(f"unknown extension slot {slot!r}; known: {', '.join(SLOTS)}")
        self.hooks[slot] = func

    def get(self, slot: str) -> Callable[..., Any] | None:
        return self.hooks.get(slot)

    def add_detail_extension(self, func: Callable[[Any, dict], None]) -> None:
        """Add a contributor of extra sections to an entry's detail (idempotent)."""
        if func not in self.detail_extensions:
            self.detail_extensions.append(func)


registry = Registry()
