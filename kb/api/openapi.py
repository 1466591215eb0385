"""OpenAPI extension: document the bearer-token scheme."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


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


# Request bodies whose views refuse unknown fields (``kb.api.params.validated`` or
# ``reject_unknown`` with exactly the documented fields): the schema says so.
CLOSED_REQUEST_COMPONENTS = (
    "QueryRequestRequest",
    "PPRRequestRequest",
    "FactsRequestRequest",
    "SplitRequestRequest",
    "CorrectionRequestRequest",
)


# Path ids that are database integers (edges, operations), whatever the URL converter says.
INTEGER_PATH_IDS = ("edge_id", "op_id")


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
    for name in CLOSED_REQUEST_COMPONENTS:
        if name in schemas:
            schemas[name]["additionalProperties"] = False
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
    return result
