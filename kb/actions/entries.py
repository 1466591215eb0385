"""Entry use cases kb owns whole: read one or several, edit, verify, recall by anchor, stale.

Each presents the entry shape of API.md through :meth:`EntryAnswer.render_entry`; kb renders
the entry's own fields (``edges`` and ``aliases`` empty). The graph app's actions of the same
use cases (:mod:`graph.actions.entries`, the ones the routes and tools call) add the sections
it owns by overriding that one method — composition by a subclass in the dependent app, no
registry.
"""

from __future__ import annotations

from rest_framework import serializers

from kb.actions.base import Action
from kb.actions.fields import WholeNumber
from kb.api import schemas
from kb.api.errors import ApiError
from kb.errors import NotFound
from kb.models import Entry, Scope
from kb.presenters import MAX_MAX_CHARS, MIN_MAX_CHARS, entry_core, entry_detail, shorten_texts
from kb.services.entries import (
    EDITABLE_FIELDS,
    clean_entry_data,
    find_entry,
    update_entry,
    verify_entry,
)
from kb.services.recall import recall_anchors, stale_entries

ENTRY_ID = {"id": "entry_id"}
MAX_BATCH_IDS = 100


def max_chars_field() -> WholeNumber:
    return WholeNumber(
        required=False,
        default=0,
        min_value=0,
        max_value=MAX_MAX_CHARS,
        help_text=f"Cut every long text (content, summary, notes…) to this many characters "
        f"with a marker and set truncated: true (0: whole texts; under {MIN_MAX_CHARS} counts "
        f"as {MIN_MAX_CHARS}).",
    )


class EntryAnswer:
    """Renders entries as API.md shows them; ``max_chars`` (when the action takes it) cuts
    their long texts."""

    bank: object
    data: dict

    def render_entry(self, entry: Entry, merged_from: str | None = None) -> dict:
        return entry_detail(entry, merged_from=merged_from)

    def read_entry(self, ref: str) -> dict:
        """The entry ``ref`` names (an id, a key, or a merged entry's id) as read now."""
        entry = find_entry(self.bank, ref)
        merged_from = ref if ref not in (entry.short_id, entry.key) else None
        return self.cut(self.render_entry(entry, merged_from=merged_from))

    def cut(self, data: dict) -> dict:
        value = self.data.get("max_chars") or 0
        return shorten_texts(data, max(value, MIN_MAX_CHARS)) if value else data


class ReadQuery(serializers.Serializer):
    max_chars = max_chars_field()


class ReadEntry(EntryAnswer, Action):
    """One entry as read now."""

    name = "entries.read"
    summary = "Read an entry (optionally as the bank believed it at a time)"
    path_ids = ENTRY_ID
    Query = ReadQuery

    def execute(self) -> dict:
        return self.read_entry(self.ids["id"])


class BatchQuery(serializers.Serializer):
    ids = serializers.CharField(
        allow_blank=True,
        help_text=f"Comma-separated entry ids or keys (at most {MAX_BATCH_IDS}).",
    )
    max_chars = max_chars_field()


class ReadEntries(EntryAnswer, Action):
    """Several entries in one call; ids that name nothing are listed as ``missing``."""

    name = "entries.batch"
    summary = "Read several entries in one call"
    Query = BatchQuery

    @classmethod
    def clean(cls, query, body) -> dict:
        if "ids" not in query:
            raise ApiError(
                400, "invalid_ids", "Pass ids=a,b,c (one or more entry ids).", {"ids": "required"}
            )
        return super().clean(query, body)

    def execute(self) -> dict:
        raw = self.data.get("ids") or ""
        ids = list(dict.fromkeys(x.strip() for x in raw.split(",") if x.strip()))
        if not ids:
            raise ApiError(
                400, "invalid_ids", "Pass ids=a,b,c (one or more entry ids).", {"ids": "required"}
            )
        if len(ids) > MAX_BATCH_IDS:
            raise ApiError(
                400,
                "invalid_ids",
                f"At most {MAX_BATCH_IDS} ids per call.",
                {"ids": f"{len(ids)} given"},
            )
        results, missing = [], []
        for ref in ids:
            try:
                results.append(self.read_entry(ref))
            except NotFound:
                missing.append(ref)
        return {"results": results, "missing": missing}


class UpdateEntry(EntryAnswer, Action):
    """Edit an entry: moves ``updated_at``, never ``verified_at``."""

    name = "entries.update"
    summary = "Edit an entry (moves updated_at, never verified_at)"
    scope = Scope.WRITE
    path_ids = ENTRY_ID
    Input = schemas.EntryPatchSerializer
    unknown_field_code = "invalid_entry"
    values_checked_by_service = True

    def execute(self) -> Entry:
        entry = find_entry(self.bank, self.ids["id"])
        changes = clean_entry_data(self.bank, self.data, partial=True, allowed=EDITABLE_FIELDS)
        if not changes:
            raise ApiError(400, "empty_patch", "Send at least one field to change.")
        return update_entry(self.bank, entry, changes, actor=self.caller.actor)

    def present(self, entry: Entry) -> dict:
        return self.read_entry(entry.short_id)


class VerifyInput(serializers.Serializer):
    note = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        help_text="What you checked (kept as the verification's reason).",
    )


class VerifyEntry(EntryAnswer, Action):
    """Confirm an entry still holds: moves ``verified_at`` only."""

    name = "entries.verify"
    summary = "Confirm an entry still holds (moves verified_at)"
    scope = Scope.WRITE
    path_ids = ENTRY_ID
    Input = VerifyInput

    def execute(self) -> Entry:
        entry = find_entry(self.bank, self.ids["id"])
        return verify_entry(self.bank, entry, actor=self.caller.actor, note=self.data["note"])

    def present(self, entry: Entry) -> dict:
        return self.read_entry(entry.short_id)


class RecallAnchors(Action):
    """Entries anchored to the files and symbols being edited."""

    name = "entries.recall_anchors"
    summary = "Entries anchored to the files and symbols being edited"
    Input = schemas.RecallAnchorsRequestSerializer
    values_checked_by_service = True

    def execute(self) -> list:
        limit = self.data.get("limit", 20)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 100:
            raise ApiError(
                400, "invalid_input", "limit must be between 1 and 100.", {"limit": "Out of range."}
            )
        return recall_anchors(
            self.bank, self.data.get("files"), self.data.get("symbols"), limit=limit
        )

    def present(self, hits) -> dict:
        return {
            "results": [
                {
                    **entry_core(h.entry),
                    "lifecycle": h.entry.status if h.entry.status != "live" else None,
                    "matched": {"files": h.files, "symbols": h.symbols},
                }
                for h in hits
            ]
        }


class StaleQuery(serializers.Serializer):
    days = WholeNumber(
        required=False,
        default=90,
        min_value=0,
        max_value=36500,
        help_text="Not verified in this many days (default 90).",
    )
    limit = WholeNumber(required=False, default=100, min_value=1, max_value=1000)


class StaleEntries(Action):
    """Entries nobody verified in N days."""

    name = "entries.stale"
    summary = "Entries nobody verified in N days"
    Query = StaleQuery

    def execute(self) -> list[Entry]:
        return stale_entries(self.bank, self.data["days"], limit=self.data["limit"])

    def present(self, entries) -> dict:
        return {
            "days": self.data["days"],
            "results": [
                {
                    **entry_core(e),
                    "verified_at": e.verified_at.isoformat() if e.verified_at else None,
                    "updated_at": e.updated_at.isoformat(),
                    "usage_count": e.usage_count,
                }
                for e in entries
            ],
        }
