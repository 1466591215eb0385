"""Recall by anchors (``002_*``): entries anchored to the files and symbols being edited, so
a constraint surfaces on the edit whatever words the editor had in mind; and staleness."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import F, Q
from django.utils import timezone

from kb.errors import InvalidInput
from kb.models import Bank, Entry, EntryStatus

MAX_ITEMS = 500


def _clean_list(value, field: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(
            f"{field} must be a list of strings.",
            code="invalid_input",
            fields={field: "List of strings."},
        )
    if len(value) > MAX_ITEMS:
        raise InvalidInput(
            f"At most {MAX_ITEMS} {field}.", code="invalid_input", fields={field: "Too many."}
        )
    return [v.strip() for v in value if v.strip()]


def normalize_path(path: str) -> str:
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


@dataclass
class AnchorHit:
    entry: Entry
    files: list[str]
    symbols: list[str]


def recall_anchors(bank: Bank, files, symbols, *, limit: int = 20) -> list[AnchorHit]:
    """Entries of ``bank`` anchored to any of ``files`` (exact path, or an anchored directory
    ending in '/' containing it) or ``symbols``; most matches first, retired ones last."""
    files = [normalize_path(f) for f in _clean_list(files, "files")]
    symbols = _clean_list(symbols, "symbols")
    if not files and not symbols:
        raise InvalidInput(
            "Give files and/or symbols.", code="invalid_input", fields={"files": "Empty."}
        )
    directories = {f.rsplit("/", i)[0] + "/" for f in files for i in range(1, f.count("/") + 1)}
    query = Q(anchor_files__overlap=files + sorted(directories)) | Q(
        anchor_symbols__overlap=symbols
    )
    candidates = (
        Entry.objects.filter(bank=bank)
        .exclude(status__in=[EntryStatus.MERGED, EntryStatus.DELETED])
        .filter(query)
        .select_related("kind")[: limit * 5]
    )
    wanted_files, wanted_symbols = set(files), set(symbols)
    hits = []
    for entry in candidates:
        matched_files = []
        for anchor in entry.anchor_files:
            norm = normalize_path(anchor)
            if norm in wanted_files or (
                norm.endswith("/") and any(f.startswith(norm) for f in files)
            ):
                matched_files.append(anchor)
        matched_symbols = [s for s in entry.anchor_symbols if s in wanted_symbols]
        if matched_files or matched_symbols:
            hits.append(AnchorHit(entry, matched_files, matched_symbols))
    hits.sort(
        key=lambda h: (
            h.entry.status != EntryStatus.LIVE,
            -(len(h.files) + len(h.symbols)),
            -h.entry.kind.weight,
            h.entry.pk,
        )
    )
    return hits[:limit]


def stale_entries(bank: Bank, days: int, *, limit: int = 100) -> list[Entry]:
    """Live entries nobody verified in ``days`` days (never verified first, then oldest)."""
    if not isinstance(days, int) or days < 0 or days > 36500:
        raise InvalidInput(
            "days must be a whole number between 0 and 36500.",
            code="invalid_input",
            fields={"days": "Invalid."},
        )
    cutoff = timezone.now() - dt.timedelta(days=days)
    return list(
        Entry.objects.filter(bank=bank, status=EntryStatus.LIVE)
        .filter(Q(verified_at__isnull=True) | Q(verified_at__lt=cutoff))
        .select_related("kind")
        .order_by(F("verified_at").asc(nulls_first=True), "-usage_count", "pk")[:limit]
    )
