"""Usage counters: bumped only for entries actually handed to a caller."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import F
from django.utils import timezone

from kb.models import Entry


def bump_usage(entry_ids: Iterable[int]) -> int:
    """One UPDATE for all ids; no history rows (usage is not knowledge)."""
    ids = list(entry_ids)
    if not ids:
        return 0
    return Entry.objects.filter(pk__in=ids).update(
        usage_count=F("usage_count") + 1, last_used_at=timezone.now()
    )
