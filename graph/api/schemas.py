"""Serializers that document the graph API's answers in the OpenAPI schema; request shapes
that an action validates live with the action (``graph.actions``) and are re-exported here."""

from rest_framework import serializers

from graph.actions.curation import (  # noqa: F401
    MergeRequestSerializer,
    ProposalDecideSerializer,
    RevertRequestSerializer,
)
from graph.actions.edges import (  # noqa: F401 — the request shapes are the actions'
    EdgeCreateSerializer,
    EdgeEndsMixin,
    InvalidateSerializer,
    ReasonSerializer,
    RenoteSerializer,
    RetypeSerializer,
)
from kb.api import schemas


class EdgeSerializer(EdgeEndsMixin, serializers.Serializer):
    id = serializers.IntegerField()
    relation = serializers.CharField()
    label = serializers.CharField(allow_null=True)
    note = serializers.CharField(help_text="The note as read from the from end.")
    note_in = serializers.CharField(
        help_text="The note as read from the to end (differs only for system-written notes)."
    )
    evidence = serializers.JSONField()
    source = serializers.CharField()
    actor = serializers.CharField()
    valid_from = serializers.DateTimeField(allow_null=True)
    valid_to = serializers.DateTimeField(allow_null=True)
    recorded_at = serializers.DateTimeField()
    invalidated_at = serializers.DateTimeField(allow_null=True)
    replaces = serializers.IntegerField(allow_null=True)


class OptionalReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, allow_null=True)


class CandidateSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    kind = serializers.CharField()
    key = serializers.CharField(allow_null=True)
    score = serializers.FloatField()


class ResolveSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["resolved", "ambiguous", "not_found"])
    matched = serializers.ChoiceField(
        choices=["short_id", "key", "exact", "alias", "fuzzy"], allow_null=True
    )
    entry = serializers.DictField(allow_null=True)
    candidates = CandidateSerializer(many=True)


class MergeResultSerializer(serializers.Serializer):
    operation = serializers.IntegerField()
    keep = serializers.CharField()
    away = serializers.CharField()
    edges_repointed = serializers.IntegerField()
    edges_collapsed = serializers.IntegerField()
    aliases_added = serializers.IntegerField()
    self_loops_dropped = serializers.ListField(child=serializers.IntegerField())


class OperationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    actor = serializers.CharField()
    reason = serializers.CharField()
    time = serializers.DateTimeField()
    details = serializers.DictField()
    reverted_by = serializers.IntegerField(allow_null=True)
    changes = serializers.ListField(child=serializers.DictField())


class RevertResultSerializer(serializers.Serializer):
    operation = serializers.IntegerField()
    reverted = serializers.IntegerField()


class EdgeWrittenSerializer(EdgeSerializer):
    warnings = schemas.WriteWarningSerializer(many=True)


class ProposalEndSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField()
    aliases = serializers.ListField(child=serializers.CharField())


class ProposalSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["open", "approved", "rejected", "unclear"])
    score = serializers.FloatField()
    reasons = serializers.ListField(child=serializers.CharField())
    a = ProposalEndSerializer(help_text="The entry the proposal would keep.")
    b = ProposalEndSerializer(help_text="The entry the proposal would merge away.")
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_reason = serializers.CharField(allow_null=True)
    operation = serializers.IntegerField(allow_null=True)


class ProposalListSerializer(serializers.Serializer):
    results = ProposalSerializer(many=True)
    next = serializers.CharField(allow_null=True)


class ProposalDecisionSerializer(serializers.Serializer):
    proposal = ProposalSerializer()
    operation = serializers.IntegerField(
        allow_null=True, help_text="The merge operation (approve), else null."
    )
