"""The parameterised questions of ``004_*`` 12.7 — dependents, owners, approvals — built on
:func:`graph.traversal.walk.traverse`."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from graph.edges.vocab import edge_types_for_bank
from graph.traversal.walk import Limits, Step, TraversalResult, traverse
from kb.errors import InvalidInput
from kb.models import Bank, Entry


def _require_relation(bank: Bank, name: str) -> None:
    if name not in edge_types_for_bank(bank):
        raise InvalidInput(
            f"This bank defines no {name!r} relation, so the question cannot be asked here.",
            code="unknown_relation",
            fields={"relation": f"{name} is not defined in this bank."},
        )


def dependents_of(
    bank: Bank,
    entity: Entry,
    depth: int = 2,
    *,
    limits: Limits | None = None,
    valid_at: dt.datetime | None = None,
    as_of: dt.datetime | None = None,
) -> TraversalResult:
    """Who depends on ``entity``, directly or through up to ``depth`` hops: ``depends_on``
    edges inbound (a bank-defined relation; 400 ``unknown_relation`` if the bank lacks it)."""
    _require_relation(bank, "depends_on")
    limits = limits or Limits()
    limits = Limits(depth, limits.max_expansions, limits.max_paths, limits.max_evidence_tokens)
    return traverse(bank, entity, Step(("depends_on",), "in"), limits, valid_at, as_of)


def owners_of(
    bank: Bank,
    entity: Entry,
    *,
    limits: Limits | None = None,
    valid_at: dt.datetime | None = None,
    as_of: dt.datetime | None = None,
) -> TraversalResult:
    """Who owns ``entity`` at ``valid_at`` as believed at ``as_of``: ``owned_by`` out, one hop."""
    limits = limits or Limits()
    limits = Limits(None, limits.max_expansions, limits.max_paths, limits.max_evidence_tokens)
    return traverse(bank, entity, [Step(("owned_by",), "out")], limits, valid_at, as_of)


APPROVAL_RULE = (
    "An approver of a change to X is: (1) every target of X -requires_approval_from-> "
    "(a bank-defined relation); (2) every target of X -requires-> whose kind is a role (kind "
    "'role' or a kind ending in '_role'); (3) when the bank defines governed_by, the same two "
    "kinds of target of every policy governing X (X -governed_by-> policy) or governing one of "
    "X's owners (X -owned_by-> owner -governed_by-> policy)."
)


def is_role_kind(kind: str) -> bool:
    return kind == "role" or kind.endswith("_role")


@dataclass
class ApprovalAnswer:
    """The approvers of a change, each with the paths that require it, and the walks asked."""

    entity: Entry
    traversals: list[TraversalResult]
    approvers: dict[str, dict] = field(default_factory=dict)  # short_id → node, paths indexes
    paths: list[dict] = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        return any(t.truncated for t in self.traversals)

    def as_json(self) -> dict:
        nodes: dict[str, dict] = {}
        edges: dict[str, dict] = {}
        for walk in self.traversals:
            body = walk.as_json()
            nodes.update(body["nodes"])
            edges.update(body["edges"])
        used_nodes = {sid for path in self.paths for sid in path["nodes"]}
        used_edges = {str(eid) for path in self.paths for eid in path["edges"]}
        limits_hit = list(dict.fromkeys(lim for t in self.traversals for lim in t.limits_hit))
        frontier = list(dict.fromkeys(t.sid(pk) for t in self.traversals for pk in t.frontier))
        return {
            "entity": {"id": self.entity.short_id, "title": self.entity.title},
            "rule": APPROVAL_RULE,
            "approvers": list(self.approvers.values()),
            "paths": self.paths,
            "nodes": {sid: info for sid, info in nodes.items() if sid in used_nodes},
            "edges": {eid: info for eid, info in edges.items() if eid in used_edges},
            "truncated": self.truncated,
            "limits_hit": limits_hit,
            "frontier": frontier,
            "searched": [t.searched() for t in self.traversals],
        }


def approvals_required_for(
    bank: Bank,
    entity: Entry,
    *,
    limits: Limits | None = None,
    valid_at: dt.datetime | None = None,
    as_of: dt.datetime | None = None,
) -> ApprovalAnswer:
    """Who must approve a change to ``entity`` under ``APPROVAL_RULE``: one walk per route
    (direct, through governing policies, through owners' policies), each with ``limits``."""
    types = edge_types_for_bank(bank)
    ask = (
        ("requires_approval_from", "requires")
        if "requires_approval_from" in types
        else ("requires",)
    )
    routes: list[list[Step]] = [[Step(ask)]]
    if "governed_by" in types:
        routes.append([Step(("governed_by",)), Step(ask)])
        routes.append([Step(("owned_by",)), Step(("governed_by",)), Step(ask)])
    limits = limits or Limits()
    limits = Limits(None, limits.max_expansions, limits.max_paths, limits.max_evidence_tokens)
    answer = ApprovalAnswer(entity, [])
    for route in routes:
        walk = traverse(bank, entity, route, limits, valid_at, as_of)
        answer.traversals.append(walk)
        for nodes, edge_ids in walk.paths:
            if len(edge_ids) != len(route):
                continue  # stopped before the last hop: names no approver
            last = walk.edges[edge_ids[-1]]
            end = walk.nodes[nodes[-1]]
            relation = walk.relation_names[last.type_id]
            if relation == "requires" and not is_role_kind(end.kind):
                continue
            index = len(answer.paths)
            answer.paths.append({"nodes": [walk.sid(pk) for pk in nodes], "edges": list(edge_ids)})
            approver = answer.approvers.setdefault(
                end.short_id,
                {
                    "id": end.short_id,
                    "title": end.title,
                    "kind": end.kind,
                    "key": end.key,
                    "paths": [],
                },
            )
            approver["paths"].append(index)
    return answer
