"""JSON shapes of API.md for entries. The shapes themselves live in :mod:`kb.presenters`
(services answer with them too); the API layer imports them from here."""

from __future__ import annotations

from kb.presenters import entry_core, entry_detail, iso

__all__ = ["entry_core", "entry_detail", "iso"]
