"""Reading use cases: resolve a name, the context bundle. Their inputs are declared here (the
OpenAPI operation and the MCP tool come from them); the work is
:func:`graph.resolution.aliases.resolve` and :func:`graph.retrieval.context.build_context`."""

from __future__ import annotations

from rest_framework import serializers

from graph.resolution.aliases import resolve
from graph.retrieval.context import MAX_BUDGET, MAX_TASK, MIN_BUDGET, build_context
from kb.actions.base import Action
from kb.api.openapi import schema_keywords
from kb.api.render import entry_detail
from kb.api.schemas import NONBLANK, NonBlankField, some_list_given


class ResolveQuery(serializers.Serializer):
    q = NonBlankField(help_text="A surface form: id, key, alias or name.")


class ResolveName(Action):
    """A name (id, key, alias, a person's or system's name) to the entry it names, or every
    candidate when it is ambiguous."""

    name = "resolve"
    summary = "Resolve a name to an entry"
    Query = ResolveQuery

    def execute(self):
        return resolve(self.bank, self.data["q"])

    def present(self, result) -> dict:
        return {
            "status": result.status,
            "matched": result.matched,
            "entry": entry_detail(result.entry) if result.entry else None,
            "candidates": result.candidates,
        }


@schema_keywords(
    anyOf=[
        {
            "type": "object",
            "required": ["task"],
            "properties": {"task": {"type": "string", "pattern": NONBLANK}},
        },
        *some_list_given("files", "symbols"),
    ]
)
class ContextRequestSerializer(serializers.Serializer):
    task = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        max_length=MAX_TASK,
        help_text="What you are about to do, in words (a task, files or symbols is needed).",
    )
    files = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        allow_null=True,
        max_length=200,
        help_text="Paths you will edit, relative to the repository root.",
    )
    symbols = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        allow_null=True,
        max_length=200,
        help_text="Symbols you will touch.",
    )
    budget_tokens = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=1500,
        min_value=MIN_BUDGET,
        max_value=MAX_BUDGET,
        help_text="The bundle's text fits this many tokens.",
    )
    limit = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=6,
        min_value=1,
        max_value=20,
        help_text="Fold results (1–20).",
    )


class GetContext(Action):
    """Prompt-ready Markdown for a task within a token budget (read; counts the query's
    usage as a query does)."""

    name = "context"
    summary = "Prompt-ready context for a task within a token budget"
    Input = ContextRequestSerializer

    def execute(self):
        return build_context(self.bank, dict(self.data), actor=self.caller.actor)

    def present(self, bundle) -> dict:
        return bundle.as_dict()
