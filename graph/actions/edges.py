"""Edge and alias use cases: link, unlink (one or several), retype, renote, invalidate, alias
add/remove. Each declares its body once (the serializers below are the OpenAPI request and
the MCP ``inputSchema``); the rules (notes, vocabulary, intervals, reasons) stay in
:mod:`graph.edges.links` and :mod:`graph.resolution.aliases`."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from graph.actions.fields import ReasonField
from graph.api.render import edge_json
from graph.edges import links
from graph.models import EdgeSource
from graph.resolution import aliases as alias_service
from kb.actions.base import Action
from kb.api.openapi import ANY_STORABLE
from kb.api.schemas import InstantField, RelationField
from kb.models import Scope
from kb.services.entries import find_entry
from kb.services.feedback import note_warnings

EDGE_ID = {"edge_id": "edge_id"}


@extend_schema_field(
    {
        "anyOf": [
            {"type": "object", "additionalProperties": ANY_STORABLE},
            {"type": "string"},
        ]  # and null: the field's allow_null
    }
)
class EvidenceField(serializers.JSONField):
    """An edge's evidence: an object, or a string (kept as ``{"text": …}``), or null; the link
    service (:func:`graph.edges.links.clean_link`, which imports read too) refuses the rest."""


class EdgeEndsMixin:
    # Adds the "from" and "to" fields ("from" is a Python keyword, so not a class attribute).
    # A comment, not a docstring: drf-spectacular would publish a docstring in the schema.

    ends_help: str | None = None

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.CharField(help_text=self.ends_help)
        fields["to"] = serializers.CharField(help_text=self.ends_help)
        return fields


class EdgeCreateSerializer(EdgeEndsMixin, serializers.Serializer):
    relation = RelationField(
        help_text="A relation of this bank's vocabulary (corrects, depends_on, …)."
    )
    note = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="How the other entry pertains, never what it says.",
    )
    evidence = EvidenceField(
        required=False,
        allow_null=True,
        help_text="An object (or a string, kept as {'text': …}); null: none.",
    )
    valid_from = InstantField(
        required=False, allow_null=True, allow_blank=True, help_text="When the fact began."
    )
    valid_to = InstantField(
        required=False, allow_null=True, allow_blank=True, help_text="When the fact ended."
    )
    label = serializers.CharField(
        required=False, allow_blank=True, help_text="Free text for relation 'other'."
    )
    reason = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, help_text="Why (kept on the operation)."
    )

    ends_help = "Entry id or key."


class ReasonSerializer(serializers.Serializer):
    reason = ReasonField(help_text="Why (kept on the operation).")


class RetypeSerializer(ReasonSerializer):
    relation = RelationField(help_text="The new relation.")
    label = serializers.CharField(
        required=False, allow_blank=True, help_text="Free text for relation 'other'."
    )


class InvalidateSerializer(ReasonSerializer):
    valid_to = InstantField(help_text="When the fact stopped holding.")


class RenoteSerializer(serializers.Serializer):
    note = serializers.CharField(
        allow_blank=True, trim_whitespace=False, help_text="How the other entry pertains."
    )
    reason = ReasonField(help_text="Why (kept on the operation).")


class EdgeAction(Action):
    """An action on one edge: renders the edge as it now stands."""

    scope = Scope.WRITE
    path_ids = EDGE_ID

    def present(self, edge) -> dict:
        return edge_json(links.get_edge(self.bank, edge.pk))


class LinkEntries(EdgeAction):
    """Join two entries with a typed edge (one ``link`` operation)."""

    name = "edges.link"
    summary = "Link two entries"
    path_ids = {}
    Input = EdgeCreateSerializer
    status = 201

    def payload(self) -> dict:
        return {k: v for k, v in self.data.items() if k != "reason"}

    def source(self) -> str:
        # A staff member in the admin writes a ``staff`` edge; every other caller an author's.
        return EdgeSource.STAFF if self.caller.via == "admin" else EdgeSource.AUTHOR

    def check(self) -> None:
        """The link's own checks (ends, relation, note rule, not already believed), writing
        nothing: a page shows them on its row before it saves; ``execute`` runs them again
        inside its operation."""
        links.check_not_believed(links.clean_link(self.bank, self.payload(), source=self.source()))

    def execute(self):
        source = self.source()
        return links.link(
            self.bank,
            self.payload(),
            reason=str(self.data.get("reason") or ""),
            actor=self.caller.actor,
            source=source,
        )

    def present(self, edge) -> dict:
        warnings = [w.as_json() for w in note_warnings([self.payload()], prefix="")]
        return {**super().present(edge), "warnings": warnings}


class ReadEdge(EdgeAction):
    """One edge, any version."""

    name = "edges.read"
    summary = "Read an edge (any version)"
    scope = Scope.READ

    def execute(self):
        return links.get_edge(self.bank, self.ids["edge_id"])


class UnlinkEdge(EdgeAction):
    """Retract an edge: close its transaction interval (one ``unlink`` operation)."""

    name = "edges.unlink"
    summary = "Unlink an edge (closes its transaction interval)"
    Input = ReasonSerializer

    def execute(self):
        return links.unlink(
            self.bank, self.ids["edge_id"], self.data["reason"], actor=self.caller.actor
        )


class UnlinkEdgesInput(ReasonSerializer):
    edges = serializers.ListField(
        child=serializers.IntegerField(), help_text="The ids of the edges to close."
    )


class UnlinkEdges(Action):
    """Close several edges with one reason: one ``unlink`` operation (the admin's bulk
    action)."""

    name = "edges.unlink_many"
    summary = "Unlink several edges"
    scope = Scope.WRITE
    Input = UnlinkEdgesInput

    def execute(self):
        return links.unlink_many(
            self.bank, self.data["edges"], self.data["reason"], actor=self.caller.actor
        )

    def present(self, edges) -> dict:
        return {"unlinked": [edge.pk for edge in edges]}


class RetypeEdge(EdgeAction):
    """Change an edge's relation: close the row, append the retyped one."""

    name = "edges.retype"
    summary = "Retype an edge (closes the row, appends the retyped one)"
    Input = RetypeSerializer

    def execute(self):
        return links.retype(
            self.bank,
            self.ids["edge_id"],
            self.data["relation"],
            self.data["reason"],
            actor=self.caller.actor,
            label=self.data.get("label") or "",
        )


class RenoteEdge(EdgeAction):
    """Correct an edge's note: close the row, append the renoted one."""

    name = "edges.renote"
    summary = "Correct an edge's note (closes the row, appends the corrected one)"
    Input = RenoteSerializer

    def execute(self):
        return links.renote(
            self.bank,
            self.ids["edge_id"],
            self.data["note"],
            self.data["reason"],
            actor=self.caller.actor,
        )


class InvalidateEdge(EdgeAction):
    """Close an edge's valid time, keeping the old belief."""

    name = "edges.invalidate"
    summary = "Close an edge's valid time, keeping the old belief"
    Input = InvalidateSerializer

    def execute(self):
        return links.invalidate(
            self.bank,
            self.ids["edge_id"],
            self.data["valid_to"],
            self.data["reason"],
            actor=self.caller.actor,
        )


# --- aliases ----------------------------------------------------------------------------------


class AliasInput(serializers.Serializer):
    surface = serializers.CharField(
        allow_blank=True,
        trim_whitespace=False,
        help_text="The other name (at most 300 characters).",
    )
    reason = serializers.CharField(
        required=False, allow_blank=True, help_text="Why (kept on the operation)."
    )


class AddAlias(Action):
    """Name an entry by another surface form (409 when it already names another entry)."""

    name = "aliases.add"
    summary = "Add an alias to an entry"
    scope = Scope.WRITE
    path_ids = {"id": "entry_id"}
    Input = AliasInput
    status = 201

    def execute(self):
        entry = find_entry(self.bank, self.ids["id"])
        source = "staff" if self.caller.via == "admin" else "author"
        return alias_service.add_alias(
            self.bank, entry, self.data["surface"], source=source, actor=self.caller.actor
        )

    def present(self, alias) -> dict:
        return {"entry": alias.entry.short_id, "surface": alias.surface, "source": alias.source}


class RemoveAlias(AddAlias):
    """Stop a surface form naming an entry (one ``unlink`` operation; revertible)."""

    name = "aliases.remove"
    summary = "Remove an alias from an entry"
    status = 200

    def execute(self):
        entry = find_entry(self.bank, self.ids["id"])
        return alias_service.remove_alias(
            self.bank,
            entry,
            self.data["surface"],
            reason=self.data.get("reason") or "",
            actor=self.caller.actor,
        )
