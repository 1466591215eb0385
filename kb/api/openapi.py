"""OpenAPI extension: document the bearer-token scheme."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers

from kb.inputs import INTEGER_IDS

# What PostgreSQL cannot store and ``kb.inputs`` refuses in every string: NUL and lone
# surrogates.
# NUL only: schemathesis's generator drops a pattern holding a surrogate range, and a lone
# surrogate is no Unicode scalar value, so no generator of JSON text produces one.
STORABLE_TEXT = "^[^\\x00]*$"
# Text the server strips and needs non-empty (reasons, titles, queries, subjects); no NUL.
# Blank as the server sees it (Python's str.isspace): ECMA's \s plus the separators U+001C–
# U+001F and U+0085, which a JSON Schema regex would otherwise count as text.
NONBLANK = "^[^\\x00]*[^\\x00\\s\\x1c-\\x1f\\x85][^\\x00]*$"
TEXT_KEYWORDS = ("format", "enum", "pattern", "const")


class KnowledgeBankAutoSchema(AutoSchema):
    """drf-spectacular's mapping, saying one more rule of DRF's own: a ``CharField`` that trims
    white space and refuses blank (the default) refuses a text of white space only, so its
    schema carries ``pattern: NONBLANK`` (spectacular says only ``minLength: 1``, which a
    text of one space meets). One place for every such field, whatever declares it; requests
    only (a response's texts are not validated, and may be empty)."""

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        kinds = schema.get("type")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if (
            direction == "request"
            and isinstance(field, serializers.CharField)
            and field.trim_whitespace
            and not field.allow_blank
            and "string" in kinds
            and not any(key in schema for key in TEXT_KEYWORDS)
        ):
            schema = {**schema, "pattern": NONBLANK}
        return schema


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "kb.api.auth.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An agent token: kb_<prefix>_<secret>.",
        }


# --- Error answers every operation can give --------------------------------------------------------

ERROR_REF = {"$ref": "#/components/schemas/ErrorEnvelope"}
ERROR_DESCRIPTIONS = {
    "400": "Bad input (including strings PostgreSQL cannot store and JSON nested too deeply)",
    "401": "No valid token (missing, unknown, revoked or expired)",
    "403": "The token lacks the scope this operation needs",
    "404": "Unknown bank (or a bank the token does not hold), or unknown id",
    "409": "Conflicts with data in the bank, or a concurrent write (retry)",
    "413": "The body is larger than the limit",
    "415": "The body's content type is not accepted",
    "429": "Rate limit of the token reached; retry after Retry-After seconds",
}
RETRY_AFTER = {
    "Retry-After": {
        "schema": {"type": "integer", "minimum": 1},
        "description": "Seconds to wait before retrying.",
    }
}


def _error(status: str) -> dict:
    answer = {
        "description": ERROR_DESCRIPTIONS[status],
        "content": {"application/json": {"schema": ERROR_REF}},
    }
    if status == "429":
        answer["headers"] = RETRY_AFTER
    return answer


# Keywords a serializer cannot say (anyOf over its fields, ...), by component name.
EXTRA_KEYWORDS: dict[str, dict] = {}


def schema_keywords(**keywords):
    """Class decorator: add JSON Schema ``keywords`` to a serializer's component(s)."""

    def register(serializer_class):
        EXTRA_KEYWORDS[serializer_class.__name__.removesuffix("Serializer")] = keywords
        return serializer_class

    return register


# Any JSON value a request may carry inside a free-form field (metadata values, evidence, a
# split's parts): its strings and keys, at every depth, are storable text.
ANY_STORABLE = {"$ref": "#/components/schemas/StorableJSON"}
STORABLE_JSON = {
    "description": "Any JSON value whose strings and keys contain no NUL character.",
    "anyOf": [
        {"type": ["null", "boolean", "number"]},
        {"type": "string", "pattern": STORABLE_TEXT},
        {"type": "array", "items": ANY_STORABLE},
        {
            "type": "object",
            "propertyNames": {"pattern": STORABLE_TEXT},
            "additionalProperties": ANY_STORABLE,
        },
    ],
}


def _needs_content(schema, schemas: dict) -> bool:
    ref = (schema or {}).get("$ref", "")
    if ref.startswith("#/components/schemas/"):
        schema = schemas.get(ref.rsplit("/", 1)[1], {})
    keys = ("required", "anyOf", "oneOf", "minLength", "minProperties")
    return any(schema.get(key) for key in keys) or schema.get("pattern") not in (
        None,
        STORABLE_TEXT,
    )


# JSON Schema keywords whose branches constrain the object they sit on.
COMBINATORS = ("anyOf", "oneOf", "allOf")


def _close_objects(node, schemas: dict, seen: set) -> None:
    """``additionalProperties: false`` on every object of a JSON request body that lists its
    properties (a serializer), nested ones included: ``BankAPIView.json_body`` refuses any field
    the documented serializer does not name (``kb.api.params.reject_undocumented``). Free-form
    maps (``DictField``: ``additionalProperties: {}``) stay open."""
    if isinstance(node, list):
        for item in node:
            _close_objects(item, schemas, seen)
        return
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        name = ref.rsplit("/", 1)[1]
        if name not in seen and name in schemas:
            seen.add(name)
            _close_objects(schemas[name], schemas, seen)
        return
    if "properties" in node and "additionalProperties" not in node:
        node["additionalProperties"] = False
    for key in ("additionalProperties", "items"):
        if node.get(key) == {}:
            node[key] = dict(ANY_STORABLE)
    for key, value in node.items():
        if key in COMBINATORS and "properties" in node and isinstance(value, list):
            # Branches beside the object's own properties (traverse: steps or relations) are
            # more rules on the same object, not objects of their own: closing one would refuse
            # every field it does not repeat. Only what they nest is closed.
            for branch in value:
                for schema in (branch.get("properties") or {}).values():
                    _close_objects(schema, schemas, seen)
        elif key == "properties" and isinstance(value, dict):
            for name, schema in value.items():
                if schema == {} or set(schema) <= {"description"}:
                    value[name] = {**schema, **ANY_STORABLE}
                else:
                    _close_objects(schema, schemas, seen)
        elif key != "additionalProperties" and isinstance(value, dict | list):
            _close_objects(value, schemas, seen)


# Path ids that are database integers (edges, operations), whatever the URL converter says.
# The integer path ids: kb.inputs.INTEGER_IDS, the declaration the id parser reads too.
INTEGER_PATH_IDS = tuple(INTEGER_IDS)


def _storable_strings(node) -> None:
    """Every free-text string of the schema, and every key of a free-form object, says
    ``pattern: STORABLE_TEXT``: the server answers 400 ``invalid_string`` to anything else."""
    if isinstance(node, list):
        for item in node:
            _storable_strings(item)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "string" in kinds and not any(k in node for k in TEXT_KEYWORDS):
        node["pattern"] = STORABLE_TEXT
    if "object" in kinds and node.get("additionalProperties", True) is not False:
        node.setdefault("propertyNames", {"pattern": STORABLE_TEXT})
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            for schema in value.values():
                _storable_strings(schema)
        elif isinstance(value, dict | list):
            _storable_strings(value)


def declare_error_answers(result, generator, request, public):
    """A drf-spectacular post-processing hook: declare on every operation the error answers the
    shared layers give (auth, tenancy, scopes, the input gate, rate limits), so the schema lists
    every status the server can return. Statuses an operation already documents are kept."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault(
        "ErrorEnvelope",
        {
            "type": "object",
            "properties": {
                "error": {
                    "type": "object",
                    "properties": {
                        "code": {"type": "string"},
                        "message": {"type": "string"},
                        "fields": {"type": "object", "additionalProperties": {}},
                    },
                    "required": ["code", "message", "fields"],
                }
            },
            "required": ["error"],
        },
    )
    for name, keywords in EXTRA_KEYWORDS.items():
        for component in (name, f"{name}Request", f"Patched{name}Request"):
            if component in schemas:
                for key, value in keywords.items():
                    value = value() if callable(value) else value
                    if key == "properties":
                        schemas[component].setdefault("properties", {}).update(value)
                    else:
                        schemas[component][key] = value
    closed: set[str] = set()
    schemas["StorableJSON"] = STORABLE_JSON
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path" and parameter.get("name") in INTEGER_PATH_IDS:
                    parameter["schema"] = {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}
            statuses = ["400", "401", "404", "429"]
            if "{bank}" in path:
                statuses.append("403")
            if method != "get":
                statuses.append("409")
            if "requestBody" in operation:
                statuses += ["413", "415"]
            responses = operation.setdefault("responses", {})
            for status in statuses:
                responses.setdefault(status, _error(status))
            if "429" in responses:
                responses["429"].setdefault("headers", RETRY_AFTER)
            for parameter in operation.get("parameters", []):
                _storable_strings(parameter.get("schema"))
            for media_type, media in operation.get("requestBody", {}).get("content", {}).items():
                _storable_strings(media.get("schema"))
                if media_type == "application/json":
                    _close_objects(media.get("schema"), schemas, closed)
                if _needs_content(media.get("schema"), schemas):
                    # An empty body reads as {} (or ""): one that must hold something is required.
                    operation["requestBody"]["required"] = True
    # Components serve requests and answers alike; no answer holds what cannot be stored.
    _storable_strings(schemas)
    return result
