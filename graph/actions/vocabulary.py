"""The relation vocabulary as actions: create, change or delete a relation (edge) type, one
``configure`` operation on its bank (see :mod:`kb.actions.config_rows`)."""

from __future__ import annotations

from rest_framework import serializers

from graph.models import EdgeType
from kb.actions.config_rows import DeleteConfigRow, SaveConfigRow
from kb.models import Bank


class EdgeTypeInput(serializers.ModelSerializer):
    """A relation of a bank's vocabulary (no bank: a core relation, superusers only)."""

    bank = serializers.SlugRelatedField(
        slug_field="slug", queryset=Bank.objects.all(), allow_null=True, required=False
    )

    class Meta:
        model = EdgeType
        fields = (
            "bank",
            "name",
            "inverse",
            "fold_role",
            "transitive",
            "neighbor_priority",
            "score_weight",
            "workflow_role",
            "description",
            "phrases",
            "inverse_phrases",
        )


class SaveEdgeType(SaveConfigRow):
    """Create or change a relation type (a bank's own, or a core one by a superuser)."""

    name = "relations.save"
    summary = "Create or change a relation type"
    model = EdgeType
    Input = EdgeTypeInput


class DeleteEdgeType(DeleteConfigRow):
    """Delete a relation type no edge uses (409 ``in_use`` otherwise)."""

    name = "relations.delete"
    summary = "Delete an unused relation type"
    model = EdgeType
