"""The MCP tools of API.md "MCP" (the fourteen listed there, plus the edge-proposal queue of
"Edge extraction"): what each mirrors over REST, its description for a
model, and its input schema (relations and kinds enumerated from the banks' vocabulary).

A tool's arguments are its action's declared fields with the REST names, plus ``bank``; a path
id is ``id`` (entry), ``edge_id``, ``claim_id``, ``process_id`` or ``proposal_id``.
``dispatch`` splits them as the action declares them (path ids, query fields, body).
"""

from __future__ import annotations

from dataclasses import dataclass

from graph.actions.edges import LinkEntries, UnlinkEdge
from graph.actions.entries import CreateEntry, ReadEntry, RetireEntry, VerifyEntry
from graph.actions.extraction import DecideEdgeProposal, ListEdgeProposals
from graph.actions.lookup import GetContext, ResolveName
from graph.actions.query import QueryAction
from graph.actions.traverse import TraverseGraph
from kb.actions.claims import ClaimWork, ReleaseClaim
from kb.actions.entries import RecallAnchors
from mcpserver.compact import COMPACT_READ_CHARS, FULL
from workflows.actions import WorkflowGaps

BANK = {
    "type": "string",
    "description": "Bank slug. Optional when your token holds exactly one bank.",
}
ENTRY_ID = {"type": "string", "description": "An entry's 8-character id (or its key)."}
STRINGS = {"type": "array", "items": {"type": "string"}}

COMPACT_WRITE = (
    " Answers compactly (id, title, kind, status, warnings, similar); pass `full: true` for "
    "the whole entry."
)
COMPACT_EDGE = (
    " Answers compactly (the edge's id, from, to, relation, note, warnings); pass `full: true` "
    "for the whole edge."
)

NOTE_RULE = (
    "A note says HOW the other entry pertains, never WHAT it says: 'Concrete working recipe for "
    "the cookie-jar pattern described there.' or 'The session POST in that recipe needs "
    "--http1.1.' — not a copy of the other entry's fact (a note repeating the target's text "
    "is refused)."
)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: the action it runs (a :class:`kb.actions.base.Action`, whose declaration is
    its schema, see :func:`input_schema`) and what a model reads about it."""

    name: str
    description: str
    action: type
    read_only: bool = False
    # "entry_read", "entry_written" or "edge": the tool answers compactly unless `full: true`
    # (mcpserver.compact); None: the REST answer as it is.
    compact: str | None = None


PATH_ID_SCHEMAS = {"id": ENTRY_ID}


def action_schema(action_class) -> tuple[dict, tuple[str, ...], dict]:
    """The properties, required names and whole-object rules (a body's ``anyOf``/``oneOf``/
    ``allOf``) of an action's tool, generated from the action's one declaration: its REST
    operation as the OpenAPI document renders it when it has one, else drf-spectacular's
    mapping of its ``Query`` and ``Input`` (:mod:`mcpserver.schema`)."""
    from mcpserver import schema

    generated = schema.operation_schema(action_class)
    if generated is None:
        properties: dict = {name: {"type": "string"} for name in action_class.path_ids}
        required = list(action_class.path_ids)
        for declared in (action_class.Query, action_class.Input):
            if declared is not None:
                props, names = schema.serializer_schema(declared())
                properties.update(props)
                required += names
        generated = properties, required, {}
    properties, required, rules = generated
    for name, described in PATH_ID_SCHEMAS.items():
        if name in action_class.path_ids and "description" not in properties.get(name, {}):
            properties[name] = {**properties.get(name, {}), **described}
    return properties, tuple(required), rules


def action_tool(action_class, *, name: str, description: str, **kw) -> ToolSpec:
    """A tool that runs ``action_class``; its schema is generated from the action when the
    tool is listed (:func:`input_schema`), never at import."""
    return ToolSpec(name=name, description=description, action=action_class, **kw)


def _query_tool() -> ToolSpec:
    """The fold query (graph's QueryAction)."""
    return action_tool(
        QueryAction,
        name="query_knowledge_bank",
        read_only=True,
        description=(
            "Search the team's knowledge bank before you start or when you hit a problem: "
            "recipes, gotchas, decisions, playbooks written by earlier agents and staff. "
            "Ask in words, as you would ask a colleague ('how do I log in to production "
            "with playwright'). Results are folded: near-duplicates and corrections come "
            "as `related` pointers on one result, and `neighbors` are entries one edge "
            "away, each with a note saying why you would follow it. Fetch a pointer with "
            "get_entry only when its note says it matters for your task. Not for looking "
            "up one known name or id (use resolve or get_entry) nor for walking "
            "dependencies (use traverse)."
        ),
    )


def _entry_tools() -> list[ToolSpec]:
    """Report and read entries: generated from their actions."""
    return [
        action_tool(
            CreateEntry,
            name="report_learning",
            description=(
                "Record something you learned that the next agent would otherwise have to "
                "rediscover: a gotcha, a working recipe, a decision and its reason. Write it for "
                "a stranger: a specific title, content with the exact commands, paths and "
                "error strings. `useful_for` is one sentence naming the situation where a "
                "reader needs this ('Use when a Playwright login to production answers 403'), "
                "not a summary of the content. If it corrects, supersedes or refines an entry "
                "you read, say so in `connections` so the edge lands with the entry. "
                + NOTE_RULE
                + " Not for session logs, progress reports, to-do items or transient "
                "state ('I am now running the tests'): those are refused with not_a_learning. "
                "Search first; if an entry already says it, link or verify instead." + COMPACT_WRITE
            ),
            compact="entry_written",
        ),
        action_tool(
            ReadEntry,
            name="get_entry",
            description=(
                "Read one entry in full with its current edges both ways and its aliases. Use "
                "it to follow a pointer whose note says it matters, or to read an id someone "
                "cited. `as_of` (ISO timestamp with zone) shows what the bank believed then. "
                "Answers compactly: id, title, kind, status, summary, useful_for, content cut "
                f"to {COMPACT_READ_CHARS} characters (`max_chars` sets the cut; `truncated` "
                "says it was cut), its edges as pointers and its aliases; pass `full: true` "
                "for every field (steps, metadata, anchors, clocks). Not for searching (use "
                "query_knowledge_bank)."
            ),
            read_only=True,
            compact="entry_read",
        ),
    ]


def _link_tools() -> list[ToolSpec]:
    """Link and unlink: generated from their actions."""
    return [
        action_tool(
            LinkEntries,
            name="link_entries",
            description=(
                "Join two existing entries with a typed edge when you are sure they belong "
                "together: one corrects, supersedes or clarifies the other, a recipe cites "
                "an analysis, a service depends_on another. Direction matters: `from` "
                "corrects `to`. " + NOTE_RULE + " Not for mere similarity: never link on a "
                "hunch. When you are writing a new learning, put the connection in "
                "report_learning instead." + COMPACT_EDGE
            ),
            compact="edge",
        ),
        action_tool(
            UnlinkEdge,
            name="unlink_entries",
            description=(
                "Retract an edge that is wrong (the entries do not pertain to each other as "
                "stated). The edge is closed, not erased: history keeps it. A reason is "
                "required. Not for an edge whose fact stopped being true at some date "
                "(that is a validity change, done by curators)." + COMPACT_EDGE
            ),
            compact="edge",
        ),
    ]


def _walk_tools() -> list[ToolSpec]:
    """Resolve and traverse: generated from their actions."""
    return [
        action_tool(
            ResolveName,
            name="resolve",
            read_only=True,
            description=(
                "Turn a name you were given (an id, a key such as 'service:reports', an alias, "
                "a person's or system's name) into the entry it names. Answers `ambiguous` with "
                "every candidate rather than guessing; then ask or pick by title. Not for "
                "questions (use query_knowledge_bank)."
            ),
        ),
        action_tool(
            TraverseGraph,
            name="traverse",
            read_only=True,
            description=(
                "Walk typed edges from one entry with explicit limits: who depends on a "
                "service, what a step requires, who owns it. Give `steps` (one allow-list of "
                "relations and a direction per hop) or `relations` + `direction` + "
                "`max_depth`. Paths come with the edges' evidence; `truncated` tells you the "
                "answer is partial. Not for open questions (use query_knowledge_bank)."
            ),
        ),
    ]


def _lifecycle_and_claim_tools() -> list[ToolSpec]:
    """Retire, verify, recall by anchor, claim and release: generated from their actions."""
    return [
        action_tool(
            RetireEntry,
            name="retire_entry",
            description=(
                "Retire an entry you have shown to be no longer true, quoting the evidence "
                "verbatim (an error message, a changelog line, a command's output). Name the "
                "replacement in `superseded_by` when there is one. It stays readable and "
                "downranked. Not for entries that are merely old: verify those instead."
                + COMPACT_WRITE
            ),
            compact="entry_written",
        ),
        action_tool(
            VerifyEntry,
            name="verify_entry",
            description=(
                "Confirm that an entry still holds, after you checked it against reality in "
                "this session (you ran the recipe, saw the behaviour). Moves verified_at only. "
                "Not for entries you merely read, and not for edits." + COMPACT_WRITE
            ),
            compact="entry_written",
        ),
        action_tool(
            RecallAnchors,
            name="recall_anchors",
            description=(
                "Before editing files, ask which entries are anchored to them or to the "
                "symbols you touch: constraints and gotchas surface whatever words you had in "
                "mind. Give paths relative to the repository root. Not for questions in "
                "words (use query_knowledge_bank)."
            ),
            read_only=True,
        ),
        action_tool(
            ClaimWork,
            name="claim_work",
            description=(
                "Claim a piece of work before starting it, so other agents do not duplicate "
                "it: a subject in words ('migrate reports to the new ledger') or an entry id. "
                "Exactly one concurrent claimer wins; if someone holds it you get claim_held "
                "with the holder, since and expires_at: do something else or coordinate. "
                "Claiming again as the same holder with the same token renews; the claim "
                "belongs to your token (`holder` is only a label), so another token gets "
                "claim_not_yours. Release it when done. Not for recording knowledge."
            ),
        ),
        action_tool(
            ReleaseClaim,
            name="release_claim",
            description=(
                "Release a claim when the work is done or abandoned, so others may take it. "
                "Releasing an ended claim changes nothing. Only the token that made the claim "
                "may release it (others get claim_not_yours); a curator token may release "
                "anyone's, and that is audited. Not for someone else's live claim: "
                "coordinate instead."
            ),
        ),
    ]


def _context_and_proposal_tools() -> list[ToolSpec]:
    """The context bundle, workflow gaps and the edge-proposal queue: generated from their actions."""
    return [
        action_tool(
            GetContext,
            name="get_context",
            read_only=True,
            description=(
                "One call at the start of a task: prompt-ready Markdown with the knowledge "
                "for the task (folded results and their pointers' notes), entries anchored to "
                "the files and symbols you will edit, live claims on them and open workflow "
                "findings, packed within `budget_tokens`. `truncated` says something did not "
                "fit. Not for follow-up questions mid-task (use query_knowledge_bank)."
            ),
        ),
        action_tool(
            WorkflowGaps,
            name="workflow_gaps",
            read_only=True,
            description=(
                "Holes in a business process: dead ends, decisions with one branch, "
                "requirements nothing produces, unowned or unreachable steps, loops with no "
                "exit. With `process_id` (the process entry's id) the latest gap report; "
                "without it the bank's processes with their open findings counts. Not for "
                "engineering knowledge (use query_knowledge_bank)."
            ),
        ),
        action_tool(
            ListEdgeProposals,
            name="list_edge_proposals",
            read_only=True,
            description=(
                "Curators only (scope curate): the review queue of edges proposed by extraction "
                "from entries' prose, most confident first. Each proposal quotes the verbatim "
                "span that states it; `from`/`to` are null when a name did not resolve to "
                "exactly one entry. Page with `cursor` (the previous answer's `next`). Not a "
                "list of edges: nothing here counts until it is accepted."
            ),
        ),
        action_tool(
            DecideEdgeProposal,
            name="decide_edge_proposal",
            description=(
                "Curators only (scope curate): accept an extracted edge proposal (writes the "
                "edge with source `extracted` and the quoted span as evidence, revertible) or "
                "reject it (it is never proposed again). Read the span first: accept only what "
                "it states, never an inference. An unresolved end needs `from`/`to` naming the "
                "entry. Not for an edge you thought of yourself: that is link_entries."
            ),
        ),
    ]


def tool_specs() -> list[ToolSpec]:
    """Every tool. Relations and kinds are enumerated per bank when the tools are listed
    (:func:`input_schema` with the caller's vocabularies), not here."""
    return [
        _query_tool(),
        *_entry_tools(),
        *_link_tools(),
        *_walk_tools(),
        *_lifecycle_and_claim_tools(),
        *_context_and_proposal_tools(),
    ]


TOOL_NAMES = tuple(spec.name for spec in tool_specs())


def input_schema(spec: ToolSpec, vocabularies: dict | None = None) -> dict:
    """The tool's JSON Schema: ``bank`` plus its arguments. An action's are generated from its
    declaration, with the per-bank vocabulary of ``vocabularies`` ({slug: {"relation": [...],
    "kind": [...]}}, the banks of the caller's token) on fields marked ``x-vocabulary``."""
    from mcpserver.schema import root_rules_folded, with_vocabulary

    properties, required, rules = action_schema(spec.action)
    if spec.compact:
        properties = {**properties, "full": FULL}
    schema = {"type": "object", "properties": {"bank": BANK, **properties}}
    if required:
        schema["required"] = list(required)
    schema.update(rules)  # the body's anyOf/oneOf (recall: files or symbols), as REST has them
    # No anyOf/oneOf/allOf at the root: Claude clients refuse the whole tool list then.
    return root_rules_folded(with_vocabulary(schema, vocabularies or {}))
