"""Serializers that document the workflows API in the OpenAPI schema (rendering is in render.py)."""

from rest_framework import serializers

from workflows.models import FindingStatus, Rule, Severity


class ProcessRefSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The process entry's short id.")
    title = serializers.CharField()


class ProcessListItemSerializer(ProcessRefSerializer):
    open_findings = serializers.IntegerField(
        help_text="Findings of the latest report whose status is open."
    )
    generated_at = serializers.DateTimeField(allow_null=True)


class FindingSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="Stable across reports while the gap persists.")
    rule = serializers.ChoiceField(choices=Rule.values)
    entries = serializers.ListField(
        child=serializers.CharField(), help_text="Short ids of the entries the finding is about."
    )
    message = serializers.CharField(help_text="What is missing, why it matters, how to close it.")
    status = serializers.ChoiceField(choices=FindingStatus.values)
    severity = serializers.ChoiceField(choices=Severity.values)
    related = serializers.ListField(
        child=serializers.CharField(), help_text="Short ids of entries that explain the finding."
    )


class GapReportSerializer(serializers.Serializer):
    process = ProcessRefSerializer()
    generated_at = serializers.DateTimeField()
    report = serializers.IntegerField(help_text="The report (snapshot) id.")
    findings = FindingSerializer(many=True)
