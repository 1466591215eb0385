"""Entry use cases as the routes and tools run them: kb's entry actions with the sections the
graph owns (current edges both ways, aliases, correction marks) composed into every entry
answer, plus the use cases that need edges (create with connections, delete with bridging,
the delete plan, as-of reads, retire and restore)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from graph.api import schemas as graph_schemas
from graph.api.render import add_edges_and_aliases
from graph.curation import lifecycle
from graph.curation.delete import delete_entry, delete_preview
from graph.edges.connections import link_connections
from kb.actions import entries as kb_entries
from kb.actions.base import Action
from kb.api import schemas
from kb.api.schemas import InstantField
from kb.errors import KbError
from kb.models import Entry, Scope
from kb.services.duplicates import NEAREST, duplicate_text, nearest_entries, read_allow_duplicate
from kb.services.embedding import one_forward_pass
from kb.services.entries import clean_entry_data, create_entry, write_texts
from kb.services.feedback import SIMILAR_LIMIT, entry_feedback
from kb.services.guard import check_learning

ENTRY_ID = kb_entries.ENTRY_ID
# A learning's nearest entries, read once: enough for the duplicate check and the feedback.
NEAREST_READ = max(NEAREST, SIMILAR_LIMIT)


class WithGraph(kb_entries.EntryAnswer):
    """Entry answers with the graph's sections."""

    def render_entry(
        self, entry: Entry, merged_from: str | None = None, new_edges: list | None = None
    ) -> dict:
        data = super().render_entry(entry, merged_from=merged_from)
        add_edges_and_aliases(entry, data, new_edges)
        return data


@extend_schema_field({"type": "string", "format": "date-time"})
class TimestampField(serializers.CharField):
    """An ISO 8601 timestamp with a zone (parsed by the service that reads it)."""


class ReadQuery(kb_entries.ReadQuery):
    as_of = TimestampField(
        required=False, help_text="ISO timestamp with zone: what the bank believed then."
    )
    valid_at = InstantField(
        required=False, help_text="With as_of: edges valid at this date or time."
    )


class ReadEntry(WithGraph, kb_entries.ReadEntry):
    """One entry with its edges and aliases, now or as the bank believed it at ``as_of``."""

    Query = ReadQuery

    @classmethod
    def clean(cls, query, body) -> dict:
        if hasattr(query, "getlist") and "as_of" in query:
            from graph.api.traverse_views import clean_query

            # As-of reads refuse unknown parameters and mend a zone's '+' the URL lost.
            raw = clean_query(query, {"as_of", "valid_at", "max_chars"})
            data = super().clean(
                {"max_chars": raw["max_chars"]} if "max_chars" in raw else {}, body
            )
            return {**raw, **data}
        return super().clean(query, body)

    def execute(self) -> dict:
        if "as_of" not in self.data:
            return super().execute()
        from graph.retrieval import history

        data = history.entry_as_of(
            self.bank, self.ids["id"], self.data["as_of"], self.data.get("valid_at")
        )
        return self.cut(data)


class ReadEntries(WithGraph, kb_entries.ReadEntries):
    pass


class UpdateEntry(WithGraph, kb_entries.UpdateEntry):
    pass


class VerifyEntry(WithGraph, kb_entries.VerifyEntry):
    pass


class CreateEntry(WithGraph, Action):
    """Report a learning: the entry and its connections land together (any bad connection
    rolls the entry back); the answer adds write feedback (warnings, similar entries)."""

    name = "entries.create"
    summary = "Report a learning"
    scope = Scope.WRITE
    Input = schemas.EntryWriteSerializer
    unknown_field_code = "invalid_entry"
    values_checked_by_service = True
    status = 201

    def execute(self):
        body = dict(self.data)
        allow_duplicate = read_allow_duplicate(body)
        data = clean_entry_data(self.bank, body)
        # One forward pass for the whole write, in the background and in stages (the content
        # text, the guard's, the other two search texts: one model call each): the guard, the
        # duplicate check, the entry's vectors and the feedback's similar entries all read it,
        # and one statement finds the entries nearest to the new text for both the duplicate
        # check and the feedback. The entry and its connections are written while the model
        # runs; the checks that read its vectors run before anything is kept, each once its
        # stage is there: the nearest entries while the model computes the guard's text.
        check_learning(data, classifier=False)  # the guard's rules need no vector, nor the model
        with one_forward_pass(write_texts(data), background=True):
            nearest: list = []
            vetted = False

            def vet() -> list:
                nonlocal vetted
                vetted = True
                # A read: the guard, judged after it, still answers before a duplicate.
                nearest.extend(nearest_entries(self.bank, duplicate_text(data), limit=NEAREST_READ))
                check_learning(data, rules=False)
                return nearest

            try:
                entry, edges = self.create(data, allow_duplicate, vet=vet)
            except KbError:
                if vetted:
                    raise  # the checks ran in their order: the guard, values, duplicates
                # Refused before its vectors were read: the checks in their order decide the
                # answer (the guard, then the entry's values, then duplicates, then the
                # connections), as a write that waited for the model answers.
                check_learning(data, rules=False)
                nearest = nearest_entries(self.bank, duplicate_text(data), limit=NEAREST_READ)
                entry, edges = self.create(data, allow_duplicate, nearest=nearest)
            feedback = entry_feedback(self.bank, entry, data.get("connections"), nearest)
        return entry, edges, feedback

    def create(self, data: dict, allow_duplicate: bool, **checks) -> tuple[Entry, list]:
        """The entry, with the edges its connections wrote (``new_edges``, for the answer)."""
        made: list = []

        def linker(bank, entry, connections):
            made.extend(link_connections(bank, entry, connections))

        entry = create_entry(
            self.bank,
            data,
            actor=self.caller.actor,
            allow_duplicate=allow_duplicate,
            linker=linker,
            **checks,
        )
        return entry, made

    def present(self, result) -> dict:
        # The answer renders the rows the write holds (the entry as written and the edges
        # its connections wrote): the entry as read again after the commit, without reading.
        entry, edges, feedback = result
        data = self.cut(self.render_entry(entry, new_edges=edges))
        return {**data, **feedback.as_json()}


class DeleteQuery(serializers.Serializer):
    reason = serializers.CharField(
        required=False, allow_blank=True, help_text="Why (kept on the delete operation)."
    )


class DeleteBody(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, allow_null=True)


class DeleteEntry(Action):
    """Delete an entry, bridging its edges (X→B→Y becomes X→Y); one revertible operation."""

    name = "entries.delete"
    summary = "Delete an entry, bridging its edges (scope curate)"
    scope = Scope.CURATE
    path_ids = ENTRY_ID
    Query = DeleteQuery
    Input = DeleteBody
    values_checked_by_service = True

    def execute(self):
        reason = self.data.get("reason") or ""
        return delete_entry(self.bank, self.ids["id"], reason, actor=self.caller.actor)

    def present(self, result) -> dict:
        return result.as_json()


class DeletePlan(Action):
    """What deleting an entry would do, written nowhere."""

    name = "entries.delete_plan"
    summary = "Preview what deleting an entry does (bridges, corrections carried or removed)"
    path_ids = ENTRY_ID

    def execute(self):
        return delete_preview(self.bank, self.ids["id"])

    def present(self, plan) -> dict:
        return plan.as_json()


class RetireEntry(WithGraph, Action):
    """Retire an entry with verbatim evidence (optionally superseded by a newer one)."""

    name = "entries.retire"
    summary = "Retire an entry with verbatim evidence"
    scope = Scope.WRITE
    path_ids = ENTRY_ID
    Input = schemas.RetireSerializer
    values_checked_by_service = True

    def execute(self) -> Entry:
        return lifecycle.retire_entry(
            self.bank,
            self.ids["id"],
            self.data.get("reason"),
            self.data.get("evidence"),
            superseded_by=self.data.get("superseded_by"),
            actor=self.caller.actor,
        )

    def present(self, entry: Entry) -> dict:
        return self.read_entry(entry.short_id)


class RestoreEntry(WithGraph, Action):
    """Undo a retirement (a supersedes edge, if any, stays)."""

    name = "entries.restore"
    summary = "Undo a retirement"
    scope = Scope.WRITE
    path_ids = ENTRY_ID
    Input = graph_schemas.OptionalReasonSerializer

    def execute(self) -> Entry:
        reason = str(self.data.get("reason") or "")
        return lifecycle.restore_entry(
            self.bank, self.ids["id"], reason=reason, actor=self.caller.actor
        )

    def present(self, entry: Entry) -> dict:
        return self.read_entry(entry.short_id)
