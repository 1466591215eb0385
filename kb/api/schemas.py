"""Request and response serializers used to document the API in the OpenAPI schema.

Validation itself lives in the services (so REST, MCP, imports and commands agree); these
classes describe the shapes for the schema and the offline docs.
"""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from kb.api.openapi import NONBLANK, schema_keywords
from kb.entry_limits import DEFAULT_LIMITS, ITEM_CHARS

NONBLANK_TEXT = {"type": "string", "pattern": NONBLANK}
# A date (YYYY-MM-DD) or an ISO 8601 timestamp: graph.edges.clocks.parse_instant.
INSTANT = {
    "anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}]
}


def some_list_given(*names: str, max_items: int = 200) -> list[dict]:
    """``anyOf`` branches: at least one of the lists ``names`` holds a non-blank string (the
    server drops blank items and needs something left): ``contains``, not ``items``, since
    blank items beside a non-blank one are accepted (``items`` said every item must be
    non-blank, and schemathesis sent such a list as invalid data the server took)."""
    return [
        {
            "type": "object",
            "required": [name],
            "properties": {
                name: {
                    "type": "array",
                    "minItems": 1,
                    "contains": NONBLANK_TEXT,
                    "maxItems": max_items,
                }
            },
        }
        for name in names
    ]


@extend_schema_field(NONBLANK_TEXT)
class NonBlankField(serializers.CharField):
    """A string with at least one character that is not white space."""


@extend_schema_field(INSTANT)
class InstantField(serializers.CharField):
    """A date or an ISO 8601 timestamp."""


def _only(name: str, schema: dict) -> dict:
    return {
        "type": "object",
        "properties": {name: schema},
        "required": [name],
        "additionalProperties": False,
    }


@extend_schema_field(
    {
        "oneOf": [
            _only("durable", {"type": "boolean", "enum": [True]}),
            _only("expires_at", {"type": "string", "format": "date"}),
            _only("resolved_by", {"type": "string", "minLength": 1}),
        ]
    }
)
class LifetimeField(serializers.DictField):
    """Exactly one of {"durable": true}, {"expires_at": "YYYY-MM-DD"}, {"resolved_by": "<id>"}."""


@extend_schema_field(
    {
        "type": ["array", "null"],
        "items": {"anyOf": [{"type": "string"}, {"type": "object"}]},
        "maxItems": DEFAULT_LIMITS["steps"],
        "description": "A playbook's steps: strings or objects (each at most "
        f"{ITEM_CHARS['steps']} characters as JSON text).",
    }
)
class StepsField(serializers.ListField):
    """A list of steps, each a string or an object."""


@extend_schema_field(
    {
        "type": "string",
        "x-vocabulary": "relation",
        "description": "A relation of the bank's vocabulary (its edge types, core ones included).",
    }
)
class RelationField(serializers.CharField):
    """An edge type name; MCP tools enumerate the named bank's (``x-vocabulary``)."""


@extend_schema_field(
    {
        "type": "string",
        "x-vocabulary": "kind",
        "description": "An entry kind of the bank's vocabulary (core ones included).",
    }
)
class KindField(serializers.CharField):
    """An entry kind name; MCP tools enumerate the named bank's (``x-vocabulary``)."""


class ErrorBody(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    fields = serializers.DictField()


class ErrorEnvelope(serializers.Serializer):
    error = ErrorBody()


def _limited_list(field: str, **kwargs) -> serializers.ListField:
    """A list field with the default item count and item length of kb.entry_limits."""
    return serializers.ListField(
        child=serializers.CharField(allow_blank=True, max_length=ITEM_CHARS[field]),
        max_length=DEFAULT_LIMITS[field],
        required=False,
        allow_null=True,
        **kwargs,
    )


class AnchorsSerializer(serializers.Serializer):
    """Files and symbols this knowledge is about."""

    files = _limited_list("anchor_files")
    symbols = _limited_list("anchor_symbols")


class ConnectionSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The other entry's 8-character id (or its key).")
    relation = RelationField()
    note = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="How the other entry pertains, never what it says.",
    )


class EntryWriteSerializer(serializers.Serializer):
    # The default limits of kb.entry_limits (checked on the stripped text; a bank may set its
    # own in settings.entry_limits; over a limit the answer is 400 too_long).
    title = NonBlankField(max_length=DEFAULT_LIMITS["title"])
    content = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, max_length=DEFAULT_LIMITS["content"]
    )
    summary = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        max_length=DEFAULT_LIMITS["summary"],
        help_text="One sentence.",
    )
    useful_for = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        max_length=DEFAULT_LIMITS["useful_for"],
        help_text="When a reader needs this: one sentence naming the situation.",
    )
    kind = KindField(required=False)
    key = serializers.CharField(required=False, allow_null=True, max_length=DEFAULT_LIMITS["key"])
    systems = _limited_list("systems")
    tasks = _limited_list("tasks")
    metadata = serializers.DictField(required=False, allow_null=True)
    lifetime = LifetimeField(
        help_text='Exactly one of {"durable": true}, {"expires_at": "YYYY-MM-DD"}, {"resolved_by": "<id>"}.'
    )
    anchors = AnchorsSerializer(required=False, allow_null=True)
    steps = StepsField(required=False, allow_null=True)
    connections = ConnectionSerializer(many=True, required=False, allow_null=True)
    allow_duplicate = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Store the entry even when it duplicates an existing one (otherwise 409 "
        "duplicate_entry names the existing entry).",
    )


@schema_keywords(minProperties=1)  # an empty PATCH is 400 empty_patch
class EntryPatchSerializer(EntryWriteSerializer):
    title = NonBlankField(required=False, max_length=DEFAULT_LIMITS["title"])
    lifetime = LifetimeField(required=False)
    allow_duplicate = None  # an edit is not checked for duplicates


class EntryLinkSerializer(serializers.Serializer):
    edge_id = serializers.IntegerField()
    relation = serializers.CharField()
    direction = serializers.ChoiceField(choices=["in", "out"])
    note = serializers.CharField(allow_blank=True)
    entry = serializers.DictField()


class CorrectionRemovedSerializer(serializers.Serializer):
    by = serializers.CharField(help_text="The deleted entry that corrected this one.")
    title = serializers.CharField()
    relation = serializers.ChoiceField(choices=["corrects", "supersedes"])
    removed_at = serializers.DateTimeField()


class EntrySerializer(serializers.Serializer):
    id = serializers.CharField()
    key = serializers.CharField(allow_null=True)
    title = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField()
    summary = serializers.CharField()
    content = serializers.CharField()
    useful_for = serializers.CharField()
    systems = serializers.ListField(child=serializers.CharField())
    tasks = serializers.ListField(child=serializers.CharField())
    steps = serializers.ListField(allow_null=True)
    metadata = serializers.DictField()
    lifetime = serializers.DictField()
    expired = serializers.BooleanField()
    anchors = AnchorsSerializer()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    verified_at = serializers.DateTimeField(allow_null=True)
    verified_by = serializers.CharField(allow_null=True)
    usage_count = serializers.IntegerField()
    edges = EntryLinkSerializer(many=True)
    aliases = serializers.ListField(child=serializers.CharField())
    merged_from = serializers.CharField(required=False)
    corrected_by = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="The entry whose current corrects edge points here.",
    )
    superseded_by = serializers.CharField(
        required=False, allow_null=True, help_text="The entry that currently supersedes this one."
    )
    correction_removed = CorrectionRemovedSerializer(
        many=True,
        required=False,
        help_text="Corrections (or supersessions) whose source was deleted with no entry taking "
        "them over: the entry was corrected once; read it with that in mind.",
    )


class EntryBatchSerializer(serializers.Serializer):
    results = EntrySerializer(many=True)
    missing = serializers.ListField(
        child=serializers.CharField(), help_text="Requested ids that name no entry of the bank."
    )


class ResultLinkSerializer(serializers.Serializer):
    id = serializers.CharField()
    relation = serializers.CharField()
    direction = serializers.ChoiceField(choices=["in", "out"])
    note = serializers.CharField(allow_blank=True)


class RelatedItemSerializer(serializers.Serializer):
    id = serializers.CharField()
    relation = serializers.CharField()
    direction = serializers.ChoiceField(choices=["in", "out"])
    kind = serializers.ChoiceField(choices=["folded", "neighbor"])
    note = serializers.CharField(allow_blank=True)
    summary = serializers.CharField(allow_blank=True)
    title = serializers.CharField()
    status = serializers.CharField()
    steps = serializers.ListField(required=False, help_text="A playbook's steps, whole.")
    via = serializers.DictField(required=False, allow_null=True, help_text="Folded items only.")
    replacement = serializers.BooleanField(
        required=False, help_text="Pinned: supersedes this result."
    )
    content = serializers.CharField(
        required=False, help_text="Only for ids in the request's expand."
    )
    truncated = serializers.BooleanField(
        required=False, help_text="Its expanded content or steps were cut to fit the budget."
    )


class QueryResultSerializer(serializers.Serializer):
    id = serializers.CharField()
    key = serializers.CharField(allow_null=True)
    title = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField()
    summary = serializers.CharField()
    content = serializers.CharField()
    useful_for = serializers.CharField()
    systems = serializers.ListField(child=serializers.CharField())
    tasks = serializers.ListField(child=serializers.CharField())
    steps = serializers.ListField(allow_null=True)
    score = serializers.FloatField()
    rank = serializers.IntegerField()
    matched_by = serializers.ListField(child=serializers.CharField())
    lifecycle = serializers.CharField(
        allow_null=True, help_text="Why a non-live result is downranked."
    )
    related = RelatedItemSerializer(many=True)
    neighbors = RelatedItemSerializer(many=True)
    relevance = serializers.FloatField(
        required=False, help_text="Weighted cosine (plus the lexical arm), before kind/lifecycle."
    )
    confidence = serializers.ChoiceField(
        choices=["high", "medium", "low"],
        required=False,
        help_text="low: below the bank's relevance_floor; high: at or above confidence_high.",
    )
    truncated = serializers.BooleanField(required=False, help_text="content was cut (or compact).")
    links = ResultLinkSerializer(
        many=True, required=False, help_text="Every current edge to another returned result."
    )
    corrected_by = serializers.CharField(
        required=False, allow_null=True, help_text="A returned result that corrects this one."
    )
    superseded_by = serializers.CharField(
        required=False, allow_null=True, help_text="A returned result that supersedes this one."
    )
    compact_pointers = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Present when the token budget left no room for whole pointers: each "
        "'<id> <relation> <in|out> <folded|neighbor|link>', then ': ' and the first words of "
        "its note when it has one, moved here from related, neighbors or links.",
    )
    hops = ResultLinkSerializer(
        many=True,
        required=False,
        help_text="Further noted edges of this result past its neighbour slots, ranked by "
        "the same relevance (the note's vector and words with the neighbour's vectors), at "
        "most 12; absent when there are none.",
    )


class QueryStatsSerializer(serializers.Serializer):
    pool = serializers.IntegerField()
    groups = serializers.IntegerField()
    folded = serializers.IntegerField()
    refilled = serializers.IntegerField()
    neighbors = serializers.IntegerField()
    took_ms = serializers.FloatField()
    neighbor_cap_reached = serializers.IntegerField(
        required=False, help_text="Results whose neighbour candidates were capped (hubs)."
    )
    refills_below_floor = serializers.IntegerField(required=False)
    ranked_after_corrector = serializers.IntegerField(required=False)
    tokens = serializers.IntegerField(required=False)
    budget_tokens = serializers.IntegerField(required=False)
    contents_cut = serializers.IntegerField(required=False)
    results_cut = serializers.IntegerField(required=False)
    pointers_compacted = serializers.IntegerField(
        required=False, help_text="Pointers moved to compact_pointers to fit the budget."
    )
    dropped_pointers = serializers.IntegerField(
        required=False, help_text="Pointers left out: not even their ids fitted the budget."
    )
    hops_cut = serializers.IntegerField(
        required=False, help_text="Hop lines left out by the per-result cap or the budget."
    )


class QueryResponseSerializer(serializers.Serializer):
    bank = serializers.CharField()
    query = serializers.CharField()
    fold = serializers.BooleanField()
    no_good_match = serializers.BooleanField(
        required=False, help_text="No result clears the bank's relevance floor."
    )
    results = QueryResultSerializer(many=True)
    stats = QueryStatsSerializer()


class JobSerializer(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.ChoiceField(choices=["queued", "running", "succeeded", "failed"])
    progress = serializers.DictField()
    result = serializers.DictField()
    errors = serializers.ListField(child=serializers.DictField())


class JobQueuedSerializer(serializers.Serializer):
    job = serializers.CharField()


class DeleteCorrectionSerializer(serializers.Serializer):
    """A corrects/supersedes edge of the deleted entry and what becomes of it."""

    relation = serializers.ChoiceField(choices=["corrects", "supersedes"])
    target = serializers.DictField(help_text="{id, title} of the corrected entry.")
    carried_to = serializers.DictField(
        allow_null=True,
        help_text="{id, title} of the entry that takes the correction over (it supersedes or "
        "corrects the deleted one); null: the target is marked correction_removed.",
    )
    effect = serializers.CharField(help_text="One sentence saying what the target will show.")


class DeleteResultSerializer(serializers.Serializer):
    operation = serializers.IntegerField()
    bridged = serializers.IntegerField()
    corrections = DeleteCorrectionSerializer(many=True, required=False)


class DeletePlanSerializer(serializers.Serializer):
    entry = serializers.DictField(help_text="{id, title} of the entry a delete would remove.")
    bridges = serializers.ListField(
        child=serializers.DictField(),
        help_text="Each X→entry→Y pair: {from, to, relation written, through: [in, out], "
        "already_connected}.",
    )
    corrections = DeleteCorrectionSerializer(many=True)
    edges_closed = serializers.IntegerField()
    aliases_removed = serializers.ListField(child=serializers.CharField())


class AnchorRecallSerializer(serializers.Serializer):
    results = serializers.ListField(child=serializers.DictField())


@schema_keywords(anyOf=some_list_given("files", "symbols", max_items=500))
class RecallAnchorsRequestSerializer(AnchorsSerializer):
    files = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        allow_null=True,
        max_length=500,
    )
    symbols = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        allow_null=True,
        max_length=500,
    )
    limit = serializers.IntegerField(required=False, default=20, min_value=1, max_value=100)


class StaleListSerializer(serializers.Serializer):
    days = serializers.IntegerField()
    results = serializers.ListField(child=serializers.DictField())


class RetireSerializer(serializers.Serializer):
    reason = NonBlankField()
    evidence = NonBlankField(help_text="Verbatim text showing the old state ended.")
    superseded_by = serializers.CharField(required=False, allow_null=True)


class WriteWarningSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="connection_without_note, duplicate, …")
    message = serializers.CharField()
    fields = serializers.DictField()


class SimilarEntrySerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    score = serializers.FloatField(help_text="Cosine similarity of the content vectors.")


class EntryWrittenSerializer(EntrySerializer):
    warnings = WriteWarningSerializer(many=True)
    similar = SimilarEntrySerializer(many=True)
