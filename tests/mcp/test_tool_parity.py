"""MCP/OpenAPI parity (issue 23): a tool whose action has a REST operation offers exactly the
operation's fields — names, types, bounds, enums, defaults — and exactly the action's declared
input; and a token holding two banks is offered each bank's own vocabulary."""

from __future__ import annotations

import jsonschema
import pytest

from graph.models import EdgeType
from kb.actions.base import Action
from kb.models import Bank, EntryKind
from kb.services.tokens import create_token
from mcpserver import schema
from mcpserver.server import _vocabularies
from mcpserver.tools import input_schema, tool_specs

KEYWORDS = (
    "type",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "maxItems",
    "minItems",
    "enum",
    "default",
    "pattern",
    "format",
)
TRANSPORT = {"bank", "full"}  # the tool's own arguments: which bank; compact or whole answer


def action_tools():
    return [s for s in tool_specs() if isinstance(s.action, type) and issubclass(s.action, Action)]


# Tools whose action has no single REST operation: workflow_gaps answers both the process
# list and one process's report (two REST operations), so it is compared with its declaration
# only (test_each_action_tool_offers_what_its_action_declares).
WITHOUT_REST_OPERATION = {"workflow_gaps"}


def rest_tools():
    return [s for s in action_tools() if s.name not in WITHOUT_REST_OPERATION]


def test_only_the_named_tools_lack_a_rest_operation():
    lacking = {s.name for s in action_tools() if schema.rest_operation(s.action) is None}
    assert lacking == WITHOUT_REST_OPERATION


def operation_fields(action_class) -> dict[str, dict]:
    """The REST operation's fields as a client sees them: path ids (named as the tool names
    them), query parameters and the JSON body's properties, ``$ref``s inlined."""
    found = schema.rest_operation(action_class)
    assert found is not None, f"{action_class.__name__} has no REST operation"
    _, _, operation = found
    components = schema.openapi()["components"]["schemas"]
    argument_of = {url: arg for arg, url in action_class.path_ids.items()}
    fields = {}
    for parameter in operation.get("parameters", []):
        if parameter["in"] == "path" and parameter["name"] == "bank":
            continue
        name = argument_of.get(parameter["name"], parameter["name"])
        fields[name] = schema.inline(parameter["schema"], components)
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if body:
        fields.update(schema.inline(body["schema"], components).get("properties", {}))
    return fields


def keywords(prop: dict) -> dict:
    """The constraining keywords of a property, nested ones (items, properties) included."""
    out = {k: prop[k] for k in KEYWORDS if k in prop}
    if isinstance(prop.get("items"), dict):
        out["items"] = keywords(prop["items"])
    for name, sub in (prop.get("properties") or {}).items():
        out.setdefault("properties", {})[name] = keywords(sub)
    for combinator in ("oneOf", "anyOf"):
        if combinator in prop:
            out[combinator] = [keywords(p) for p in prop[combinator]]
    return out


@pytest.mark.parametrize("spec", rest_tools(), ids=lambda s: s.name)
def test_each_action_tool_offers_what_its_rest_operation_takes(spec):
    tool = input_schema(spec)["properties"]
    rest = operation_fields(spec.action)
    offered = set(tool) - TRANSPORT
    assert offered == set(rest), f"only in the tool: {offered - set(rest)}; only over REST: " + str(
        set(rest) - offered
    )
    for name in rest:
        assert keywords(tool[name]) == keywords(rest[name]), name


BODY_RULES = ("anyOf", "oneOf", "allOf")


def body_rules(action_class) -> list[dict]:
    """The REST body's whole-object rules (recall: ``files`` or ``symbols``), inlined."""
    _, _, operation = schema.rest_operation(action_class)
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if not body:
        return []
    shape = schema.inline(body["schema"], schema.openapi()["components"]["schemas"])
    return schema.root_rules({k: shape[k] for k in BODY_RULES if k in shape})


@pytest.mark.parametrize("spec", rest_tools(), ids=lambda s: s.name)
def test_each_action_tool_carries_its_bodys_anyof(spec):
    assert schema.root_rules(input_schema(spec)) == body_rules(spec.action)


@pytest.mark.django_db
def test_no_tool_has_a_combinator_at_its_root():
    """Anthropic's Messages API answers 400 "input_schema does not support oneOf, allOf, or
    anyOf at the top level" for such a tool, and Claude clients send the whole tool list with
    every request: one such tool breaks them all. Checked for a one-bank and a two-bank token
    (the per-bank vocabulary rules) as well as without a token."""
    acme = Bank.objects.create(slug="acme", name="Acme", kind="engineering")
    globex = Bank.objects.create(slug="globex", name="Globex", kind="engineering")
    EdgeType.objects.create(bank=acme, name="governed_by")
    _, one = create_token("one", [acme], "read,write")
    _, two = create_token("two", [acme, globex], "read,write")
    for vocabularies in ({}, _vocabularies(one), _vocabularies(two)):
        for spec in tool_specs():
            tool = input_schema(spec, vocabularies)
            assert tool["type"] == "object", spec.name
            assert not set(tool) & {"anyOf", "oneOf", "allOf"}, spec.name
    assert schema.root_rules(input_schema(_spec("traverse"), _vocabularies(two)))


def _spec(name):
    return next(s for s in tool_specs() if s.name == name)


def test_the_bodies_with_rules_are_the_known_ones():
    """The comparison above is not vacuous: these bodies state whole-object rules."""
    with_rules = {s.name for s in rest_tools() if body_rules(s.action)}
    assert {"recall_anchors", "traverse", "get_context"} <= with_rules


def test_a_tools_anyof_refuses_what_rest_refuses_and_takes_what_it_takes():
    """The carried rules are usable: a client validating with them sends what the server
    takes (the body's branches are rules on the same object, not closed objects)."""
    tools = {s.name: input_schema(s) for s in rest_tools()}
    takes = {
        "recall_anchors": [{"files": ["a.py"]}, {"files": ["a.py"], "symbols": ["f"]}],
        "traverse": [
            {"bank": "acme", "start": "abcd1234", "relations": ["cites"], "max_depth": 2},
            {"start": "abcd1234", "steps": [{"relations": ["cites"], "direction": "in"}]},
        ],
        "get_context": [{"task": "fix the login", "budget_tokens": 500}],
    }
    refuses = {
        "recall_anchors": [{}, {"files": []}],
        "traverse": [
            {"start": "abcd1234"},
            {"start": "abcd1234", "steps": [{"relations": ["cites"]}], "direction": "in"},
        ],
        "get_context": [{"budget_tokens": 500}],
    }
    for name, bodies in takes.items():
        for body in bodies:
            jsonschema.validate(body, tools[name])
    for name, bodies in refuses.items():
        for body in bodies:
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(body, tools[name])


@pytest.mark.parametrize("spec", action_tools(), ids=lambda s: s.name)
def test_each_action_tool_offers_what_its_action_declares(spec):
    action = spec.action
    declared = set(action.path_ids)
    for serializer in (action.Query, action.Input):
        if serializer is not None:
            declared |= set(serializer().fields)
    assert set(input_schema(spec)["properties"]) - TRANSPORT == declared


@pytest.mark.django_db
def test_a_two_bank_token_offers_each_bank_its_own_relations_and_kinds():
    acme = Bank.objects.create(slug="acme", name="Acme", kind="engineering")
    globex = Bank.objects.create(slug="globex", name="Globex", kind="business")
    EdgeType.objects.create(bank=acme, name="depends_on")
    EdgeType.objects.create(bank=globex, name="governed_by")
    EntryKind.objects.create(bank=globex, name="ledger_rule")
    _, raw = create_token("two-banks", [acme, globex], "read,write")
    spec = next(s for s in tool_specs() if s.name == "report_learning")

    offered = input_schema(spec, _vocabularies(raw))

    def call(bank: str, relation: str, kind: str | None = None) -> dict:
        args = {
            "bank": bank,
            "title": "A learning",
            "lifetime": {"durable": True},
            "connections": [{"id": "abcd1234", "relation": relation}],
        }
        return {**args, "kind": kind} if kind else args

    jsonschema.validate(call("acme", "depends_on"), offered)
    jsonschema.validate(call("globex", "governed_by", "ledger_rule"), offered)
    jsonschema.validate(call("acme", "corrects"), offered)  # core relations: every bank's
    for wrong in (call("acme", "governed_by"), call("globex", "depends_on")):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, offered)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(call("acme", "depends_on", "ledger_rule"), offered)


@pytest.mark.django_db
def test_graph_tools_offer_each_bank_only_its_own_relations_and_kinds():
    """link_entries and traverse (its relations, each step's relations, its kinds) with a
    token holding two banks of different vocabularies: a relation or kind one bank refuses is
    never valid for that bank's calls, and the server refuses exactly those calls."""
    acme = Bank.objects.create(slug="acme", name="Acme", kind="engineering")
    globex = Bank.objects.create(slug="globex", name="Globex", kind="business")
    EdgeType.objects.create(bank=acme, name="depends_on")
    EdgeType.objects.create(bank=globex, name="governed_by")
    EntryKind.objects.create(bank=globex, name="ledger_rule")
    _, raw = create_token("two-banks", [acme, globex], "read,write")
    tools = {s.name: input_schema(s, _vocabularies(raw)) for s in tool_specs()}

    def link(bank, relation):
        return {"bank": bank, "from": "abcd1234", "to": "bcde2345", "relation": relation}

    def walk(bank, relation, kind=None, steps=False):
        body = {"bank": bank, "start": "abcd1234"}
        if steps:
            body["steps"] = [{"relations": ["cites"]}, {"relations": [relation]}]
        else:
            body["relations"] = ["cites", relation]
        return {**body, "kinds": [kind]} if kind else body

    offered = [
        ("link_entries", link("acme", "depends_on")),
        ("link_entries", link("globex", "governed_by")),
        ("link_entries", link("globex", "corrects")),  # core relations: every bank's
        ("traverse", walk("acme", "depends_on")),
        ("traverse", walk("globex", "governed_by", "ledger_rule", steps=True)),
        ("traverse", walk("acme", "depends_on", "service", steps=True)),
    ]
    refused = [
        ("link_entries", link("acme", "governed_by")),
        ("link_entries", link("globex", "depends_on")),
        ("traverse", walk("acme", "governed_by")),
        ("traverse", walk("globex", "depends_on", steps=True)),
        ("traverse", walk("acme", "depends_on", "ledger_rule")),
    ]
    for name, args in offered:
        jsonschema.validate(args, tools[name])
    for name, args in refused:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(args, tools[name])
    # Each bank is offered exactly the vocabulary the server checks its calls against.
    from graph.edges.vocab import edge_types_for_bank
    from kb.services.entries import kinds_for_bank

    for bank in (acme, globex):
        (rule,) = [
            r
            for r in schema.root_rules(tools["traverse"])
            if "if" in r and r["if"]["properties"]["bank"]["const"] == bank.slug
        ]
        narrowed = rule["then"]["properties"]
        assert narrowed["relations"]["items"]["enum"] == sorted(edge_types_for_bank(bank))
        steps = narrowed["steps"]["items"]["properties"]["relations"]["items"]["enum"]
        assert steps == sorted(edge_types_for_bank(bank))
        assert narrowed["kinds"]["items"]["enum"] == sorted(kinds_for_bank(bank))


@pytest.mark.django_db
def test_a_one_bank_token_gets_a_plain_enum():
    acme = Bank.objects.create(slug="acme", name="Acme", kind="engineering")
    EdgeType.objects.create(bank=acme, name="depends_on")
    _, raw = create_token("one-bank", [acme], "read,write")
    spec = next(s for s in tool_specs() if s.name == "report_learning")

    offered = input_schema(spec, _vocabularies(raw))

    relation = offered["properties"]["connections"]["items"]["properties"]["relation"]
    assert "depends_on" in relation["enum"] and "corrects" in relation["enum"]
    assert not any("if" in r for r in schema.root_rules(offered))


BOUNDS = ("minimum", "maximum", "minLength", "maxLength", "maxItems", "enum", "default")


def bounds(prop: dict) -> dict:
    """The bounds a property states, directly or in the one choice set it wraps (``allOf`` /
    ``oneOf`` of an enum component and ``null``); a nullable enum's ``None`` is the null."""
    found = {k: prop[k] for k in BOUNDS if k in prop}
    for combinator in ("allOf", "oneOf", "anyOf"):
        for member in prop.get(combinator, []):
            for k in BOUNDS:
                if k in member and k not in found:
                    found[k] = member[k]
    if "enum" in found:
        found["enum"] = [v for v in found["enum"] if v is not None]
    return found


@pytest.mark.parametrize("spec", rest_tools(), ids=lambda s: s.name)
def test_the_rest_operation_states_the_bounds_the_action_declares(spec):
    """Where a view writes its query parameters by hand, their bounds are the declaration's."""
    rest = operation_fields(spec.action)
    for serializer in (spec.action.Query, spec.action.Input):
        if serializer is None:
            continue
        declared, _ = schema.serializer_schema(serializer())
        for name, prop in declared.items():
            assert bounds(rest[name]) == bounds(prop), (spec.name, name)
