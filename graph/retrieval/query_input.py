"""The query's declared input (issue 23): one DRF serializer that validates a request body
(strict JSON types, unknown fields refused) and from which both the OpenAPI request schema
(drf-spectacular) and the MCP ``query_knowledge_bank`` input schema
(:func:`mcpserver.tools.input_schema`, from the OpenAPI operation) are generated."""

from __future__ import annotations

from rest_framework import serializers

from kb.api.schemas import KindField, NonBlankField


class QueryRequestSerializer(serializers.Serializer):
    query = NonBlankField(help_text="What you need to know, in words.")
    limit = serializers.IntegerField(
        required=False,
        default=8,
        min_value=1,
        max_value=100,
        help_text="How many results (after folding) to return.",
    )
    fold = serializers.BooleanField(
        required=False,
        default=True,
        help_text="Fold connected results into one representative with typed pointers "
        "(false: the flat top `limit` by score).",
    )
    pool = serializers.IntegerField(
        required=False,
        default=20,
        min_value=1,
        max_value=200,
        help_text="How many ranked candidates the fold groups and refills from.",
    )
    neighbors = serializers.IntegerField(
        required=False,
        default=3,
        min_value=0,
        max_value=20,
        help_text="Up to this many one-hop neighbours (outside the pool) per result, each with "
        "its edge note; further noted edges come as `hops` lines.",
    )
    lexical = serializers.BooleanField(
        required=False,
        default=True,
        help_text="Also match words exactly (identifiers, error strings, flag names), fused "
        "with the vector ranking; false: vectors only.",
    )
    kinds = serializers.ListField(
        child=KindField(),
        required=False,
        allow_null=True,
        help_text="Only these kinds.",
    )
    systems = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        allow_null=True,
        help_text="Only entries about these systems.",
    )
    include_retired = serializers.BooleanField(
        required=False, default=True, help_text="Retired entries take part, downranked."
    )
    budget_tokens = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=200,
        max_value=200_000,
        help_text="The whole response fits this many tokens (characters of the JSON / 4); "
        "content goes first (marked truncated), then texts and summaries, then pointers are "
        "compacted keeping their notes' first words; notes go last. Only ids that cannot fit "
        "are dropped (stats.dropped_pointers, results_cut). Default: the bank's "
        "budget_tokens_per_result (250) times limit.",
    )
    compact = serializers.BooleanField(
        required=False, default=False, help_text="Results without content."
    )
    expand = serializers.ListField(
        child=serializers.CharField(max_length=64),
        required=False,
        allow_null=True,
        max_length=50,
        help_text="Ids of folded or neighbour items to return with their content.",
    )
    history = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Keep corrected results at their own rank (default: read from the query).",
    )
