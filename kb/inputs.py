"""The one rule for untrusted input: bounded JSON and only strings PostgreSQL can store.

PostgreSQL text cannot hold a NUL character, and UTF-8 cannot encode a lone surrogate
(``"\\ud800"`` is valid JSON, but not a storable string). Every string that reaches the database
from outside — JSON bodies (keys and values), query parameters, path parts, multipart fields and
import lines — passes :func:`check_json` or :func:`check_string` first, so a bad string is a 400
``invalid_string`` naming where it was, never a 500 from the driver. The API layer calls this in
its parsers and middleware; the importer calls it on every line. No recursion: a walk over a
hostile document uses an explicit stack.
"""

from __future__ import annotations

import json

from django.conf import settings

from kb.errors import InvalidInput


class UnstorableString(InvalidInput):
    code = "invalid_string"


class TooDeep(InvalidInput):
    code = "too_deep"


class InvalidId(InvalidInput):
    code = "invalid_id"


# Path ids that are integers (API.md: edges, operations, claims, proposals, findings), by the
# name the URLconf and the MCP tools give them, with the thing they name.
INTEGER_IDS = {
    "edge_id": "edge",
    "op_id": "operation",
    "claim_id": "claim",
    "proposal_id": "proposal",
    "finding_id": "finding",
    "community_id": "community",
}
_MAX_ID = 2**63 - 1


class UnknownValues(InvalidInput):
    code = "invalid_value"


def check_known(field: str, given, allowed, *, what: str) -> None:
    """400 ``invalid_value`` naming the values of filter ``field`` (``kinds``, ``relations``,
    ``status``) that are not in ``allowed``, and the allowed ones: the one rule for unknown
    filter values (query, graph, traverse, listings), never a silent empty answer."""
    values = [given] if isinstance(given, str) else list(given or [])
    allowed_set = set(allowed)
    unknown = sorted({str(v) for v in values if v not in allowed_set})
    if unknown:
        names = ", ".join(sorted(allowed_set))
        raise UnknownValues(
            f"Unknown {what} for {field}: {', '.join(unknown)}; this bank allows: {names}.",
            fields={field: f"Unknown: {', '.join(unknown)}. Allowed: {names}."},
            extra={"unknown": unknown, "allowed": sorted(allowed_set)},
        )


def parse_int_id(value, name: str) -> int:
    """The positive integer id ``value`` names, else 400 ``invalid_id`` naming ``name``: the
    one place an integer path id is parsed (every service that reads one by id calls it, so
    REST, MCP and the admin answer alike)."""
    text = (
        str(value).strip() if isinstance(value, int | str) and not isinstance(value, bool) else ""
    )
    if text.isascii() and text.isdigit() and 0 < int(text) <= _MAX_ID:
        return int(text)
    thing = INTEGER_IDS.get(name, name.removesuffix("_id"))
    shown = json.dumps(value)[:60] if isinstance(value, str) else repr(value)[:60]
    raise InvalidId(
        f"{name} must be a positive whole number (the {thing}'s id), not {shown}.",
        fields={name: "A positive whole number."},
    )


def check_path_and_query(path_kwargs: dict, query) -> None:
    """The request's path parts and query parameters are storable strings (``invalid_string``).
    ``query`` is a QueryDict or a dict. Integer ids are parsed by :func:`parse_int_id` where the
    service reads them, after the bank is checked: a bank the caller does not hold is a 404
    whatever the id looks like."""
    for name, value in path_kwargs.items():
        if isinstance(value, str):
            check_string(value, name)
    items = query.lists() if hasattr(query, "lists") else ((k, [v]) for k, v in query.items())
    for name, values in items:
        check_string(name, "a query parameter name")
        for value in values:
            if isinstance(value, str):
                check_string(value, name)


def max_json_depth() -> int:
    return settings.KB_MAX_JSON_DEPTH


def unstorable_reason(text: str) -> str | None:
    """Why PostgreSQL cannot store ``text`` (None when it can)."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which cannot be stored"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (e.g. \\ud800), which is not valid Unicode text"
    return None


def _segment(key: str) -> str:
    # A key that is itself unstorable is named with JSON escapes, so the message is printable.
    return key if unstorable_reason(key) is None else json.dumps(key)[1:-1]


def _join(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{_segment(key)}" if path else _segment(key)


def check_string(text: str, field: str) -> None:
    """Raise ``invalid_string`` naming ``field`` unless ``text`` can be stored."""
    reason = unstorable_reason(text)
    if reason:
        raise UnstorableString(
            f"The text of {field} {reason}.", fields={field: f"The text {reason}."}
        )


def check_json(value, root: str = "", max_depth: int | None = None) -> None:
    """Check a parsed JSON value: nesting at most ``max_depth`` deep, every key and string
    storable. The error names the first offending field path (``metadata.a[2]``)."""
    limit = max_json_depth() if max_depth is None else max_depth
    stack = [(value, root, 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            check_string(item, path or "body")
        elif isinstance(item, dict | list):
            if depth >= limit:
                where = path or "body"
                raise TooDeep(
                    f"JSON is nested more than {limit} levels deep at {where}.",
                    fields={where: f"At most {limit} levels of nesting."},
                )
            if isinstance(item, dict):
                for key, child in item.items():
                    child_path = _join(path, key)
                    if isinstance(key, str) and unstorable_reason(key):
                        check_string(key, f"{child_path} (key)")
                    stack.append((child, child_path, depth + 1))
            else:
                for index, child in enumerate(item):
                    stack.append((child, _join(path, index), depth + 1))


def _number(text: str):
    """A JSON number written with a fraction or an exponent: an ``int`` when it has no
    fractional part (JSON Schema's rule: ``100.0`` is an integer), else a ``float``."""
    value = float(text)
    if value.is_integer() and abs(value) <= 2**53:
        return int(value)
    return value


def loads_checked(text: str | bytes, root: str = "", max_depth: int | None = None):
    """``json.loads`` then :func:`check_json`; a document too deep for the parser itself is
    ``too_deep`` as well. ``ValueError`` (bad JSON) propagates to the caller."""
    try:
        value = json.loads(text, parse_float=_number)
    except RecursionError:
        limit = max_json_depth() if max_depth is None else max_depth
        raise TooDeep(
            f"JSON is nested more than {limit} levels deep.",
            fields={root or "body": f"At most {limit} levels of nesting."},
        ) from None
    check_json(value, root, max_depth)
    return value


def single_param(params, name: str):
    """The one value of query parameter ``name`` (None when absent). ``params`` is a QueryDict
    or a plain dict; a parameter given more than once is a 400, since the schema says one."""
    values = (
        params.getlist(name) if hasattr(params, "getlist") else [params[name]] * (name in params)
    )
    if len(values) > 1:
        raise InvalidInput(f"{name} is given once.", fields={name: "Given more than once."})
    return values[0] if values else None
