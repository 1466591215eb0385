"""Tool input schemas generated from the same declarations as the OpenAPI document.

An action with a REST operation gets its tool's properties from that operation as
drf-spectacular renders it (built once per process, ``$ref``s inlined): path ids under their
argument names (:attr:`~kb.actions.base.Action.path_ids`), the query parameters and the JSON
body's properties — types, bounds, enums, defaults and descriptions alike, so the tool and the
REST operation cannot differ. A body's whole-object rules (``anyOf``/``oneOf``/``allOf``: recall
needs ``files`` or ``symbols``, traverse ``steps`` or ``relations``) come along beside the
properties. An action without a REST operation gets drf-spectacular's mapping of its serializers
directly.

**Per-bank vocabulary.** A field marked ``x-vocabulary`` (``relation`` or ``kind``: see
:class:`kb.api.schemas.VocabularyField`) takes the vocabulary of the bank named in the call.
:func:`with_vocabulary` gives it the enum of the token's bank; when the token holds several, the
field carries their union and a rule per bank, ``if bank is X then enum of X``.

**No combinator at the root.** Anthropic's Messages API refuses a tool whose ``input_schema``
has ``anyOf``, ``oneOf`` or ``allOf`` at the top level, and a client that passes the tool list
through (Claude Code, Claude Desktop) then fails every request, not only this tool's.
:func:`root_rules_folded` states the same rules with the one root keyword such clients take:
``allOf(r1, …, rn)`` is ``not(anyOf(not r1, …, not rn))``; :func:`root_rules` reads them back.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

VOCABULARY = "x-vocabulary"


@functools.cache
def openapi() -> dict:
    """The OpenAPI document the REST API serves (built once per process)."""
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def inline(schema: Any, components: dict, seen: tuple = ()) -> Any:
    """``schema`` with every ``$ref`` replaced by the component it names."""
    if isinstance(schema, list):
        return [inline(item, components, seen) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if isinstance(schema.get("type"), list):  # a nullable field marked null twice
        schema = {**schema, "type": list(dict.fromkeys(schema["type"]))}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        name = ref.rsplit("/", 1)[1]
        if name in seen:  # a recursive shape: stop at an open object
            return {"type": "object"}
        merged = {**components[name], **{k: v for k, v in schema.items() if k != "$ref"}}
        return inline(merged, components, (*seen, name))
    return {key: inline(value, components, seen) for key, value in schema.items()}


@functools.cache
def _operations_by_summary() -> dict[str, list[tuple[str, str, dict]]]:
    found: dict[str, list[tuple[str, str, dict]]] = {}
    for path, methods in openapi().get("paths", {}).items():
        for method, operation in methods.items():
            if isinstance(operation, dict) and operation.get("summary"):
                found.setdefault(operation["summary"], []).append((path, method, operation))
    return found


def rest_operation(action_class) -> tuple[str, str, dict] | None:
    """(path, method, operation) of the REST operation that runs ``action_class``: the one
    whose summary is the action's (every action view declares ``summary=Action.summary``) and
    whose path names the action's path ids."""
    if not action_class.summary:
        return None
    for path, method, operation in _operations_by_summary().get(action_class.summary, []):
        if all("{" + url + "}" in path for url in action_class.path_ids.values()):
            return path, method, operation
    return None


# Keywords of a request body that constrain the whole object (recall: files or symbols;
# traverse: steps or relations), carried into the tool beside its properties.
BODY_RULES = ("anyOf", "oneOf", "allOf")


def operation_schema(action_class) -> tuple[dict, list[str], dict] | None:
    """Tool properties, required names and the body's whole-object rules (``anyOf``,
    ``oneOf``, ``allOf``) from the action's REST operation (None: it has none). The ``bank``
    path parameter is the tool's own ``bank`` argument."""
    found = rest_operation(action_class)
    if found is None:
        return None
    _, _, operation = found
    components = openapi().get("components", {}).get("schemas", {})
    argument_of = {url: arg for arg, url in action_class.path_ids.items()}
    properties: dict = {}
    required: list[str] = []
    for parameter in operation.get("parameters", []):
        name = parameter["name"]
        if parameter.get("in") == "path":
            if name == "bank":
                continue
            name = argument_of.get(name, name)
        prop = inline(copy.deepcopy(parameter.get("schema", {})), components)
        if parameter.get("description") and "description" not in prop:
            prop["description"] = parameter["description"]
        properties[name] = prop
        if parameter.get("required"):
            required.append(name)
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    rules: dict = {}
    if body is not None:
        shape = inline(copy.deepcopy(body.get("schema", {})), components)
        properties.update(shape.get("properties", {}))
        required += [n for n in shape.get("required", []) if n not in required]
        rules = {key: shape[key] for key in BODY_RULES if key in shape}
    return properties, required, rules


def serializer_schema(serializer) -> tuple[dict, list[str]]:
    """drf-spectacular's mapping of a serializer (for an action with no REST operation)."""
    from drf_spectacular.generators import SchemaGenerator
    from rest_framework.views import APIView

    from kb.api.openapi import KnowledgeBankAutoSchema

    auto = KnowledgeBankAutoSchema()
    auto.registry = SchemaGenerator().registry
    view = APIView()
    view.swagger_fake_view, view.request = True, None
    auto.view, auto.method, auto.path = view, "POST", ""
    mapped = auto._map_serializer(serializer, "request")
    from kb.api.openapi import STORABLE_JSON

    # The components the document's post-processing adds (free-form JSON values), then the
    # serializer's own.
    components = {"StorableJSON": STORABLE_JSON}
    components.update(
        {c.name: c.schema for c in auto.registry._components.values() if c.schema is not None}
    )
    mapped = inline(mapped, components)
    return mapped.get("properties", {}), list(mapped.get("required", []))


def _marked(schema: Any, path: tuple = ()) -> list[tuple[tuple, str]]:
    """(path, vocabulary) of every property marked with ``x-vocabulary``; a path is a tuple of
    ``("properties", name)`` and ``("items",)`` steps."""
    found = []
    if isinstance(schema, dict):
        if VOCABULARY in schema:
            found.append((path, schema[VOCABULARY]))
        for name, prop in (schema.get("properties") or {}).items():
            found += _marked(prop, (*path, "properties", name))
        if isinstance(schema.get("items"), dict):
            found += _marked(schema["items"], (*path, "items"))
    return found


def _at(schema: dict, path: tuple) -> dict:
    for step in path:
        schema = schema[step]
    return schema


def _nest(path: tuple, leaf: dict) -> dict:
    for step in reversed(path):
        leaf = {step: leaf}
    return leaf


def with_vocabulary(schema: dict, vocabularies: dict[str, dict[str, list[str]]]) -> dict:
    """``schema`` (a tool's whole inputSchema) with each ``x-vocabulary`` field enumerated
    from ``vocabularies`` ({bank slug: {"relation": [...], "kind": [...]}}): one bank, its
    enum; several, their union on the field plus ``allOf`` if/then per bank."""
    schema = copy.deepcopy(schema)
    marked = _marked(schema)
    if not marked or not vocabularies:
        return schema
    for path, vocabulary in marked:
        names = sorted({n for v in vocabularies.values() for n in v.get(vocabulary, [])})
        if names:
            _at(schema, path)["enum"] = names
    if len(vocabularies) > 1:
        rules = []
        for slug, vocab in sorted(vocabularies.items()):
            then: dict = {}
            for path, vocabulary in marked:
                narrowed = _nest(path, {"enum": sorted(set(vocab.get(vocabulary, [])))})
                then = _merge(then, narrowed)
            rules.append(
                {
                    "if": {"properties": {"bank": {"const": slug}}, "required": ["bank"]},
                    "then": then,
                }
            )
        schema["allOf"] = [*schema.get("allOf", []), *rules]  # after the body's own, if any
    return schema


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


ROOT_COMBINATORS = ("anyOf", "oneOf", "allOf")


def root_rules_folded(schema: dict) -> dict:
    """``schema`` with its root ``anyOf``/``oneOf``/``allOf`` (and any root ``not``) stated as one
    root ``not``: every rule must hold, so no rule may fail (``not(anyOf(not r…))``). The same
    instances validate; nothing is dropped."""
    rules = root_rules(schema)
    schema = {k: v for k, v in schema.items() if k not in (*ROOT_COMBINATORS, "not")}
    if rules:
        schema["not"] = {"anyOf": [{"not": rule} for rule in rules]}
    return schema


def root_rules(schema: dict) -> list[dict]:
    """The whole-object rules at ``schema``'s root, each a schema of its own: an ``allOf``'s
    members, an ``anyOf``/``oneOf`` as itself, the rules folded by :func:`root_rules_folded`."""
    rules: list[dict] = []
    for key in ROOT_COMBINATORS:
        if key in schema:
            rules += list(schema[key]) if key == "allOf" else [{key: schema[key]}]
    negated = schema.get("not")
    if negated is not None:
        folded = isinstance(negated, dict) and set(negated) == {"anyOf"}
        if folded and all(isinstance(r, dict) and set(r) == {"not"} for r in negated["anyOf"]):
            rules += [r["not"] for r in negated["anyOf"]]
        else:
            rules.append({"not": negated})
    return rules
