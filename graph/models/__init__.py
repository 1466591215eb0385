"""The graph's models, one module per concept (app label ``graph``).

- ``edges``: edge types (the relation vocabulary), bi-temporal typed edges, aliases.
- ``proposals``: merge proposals waiting for a curator.
- ``querylog``: every query as asked and answered.
- ``analytics``: derived data (communities, edge-note vectors), recomputed wholesale.
- ``layout``: the cached picture of a bank (server-side layout positions).
"""

from graph.models.analytics import Community, CommunityMembership, EdgeEmbedding
from graph.models.edges import Alias, Edge, EdgeSource, EdgeType, FoldRole, WorkflowRole
from graph.models.layout import GraphLayout
from graph.models.proposals import MergeProposal, ProposalStatus
from graph.models.querylog import QueryLog

__all__ = [
    "Alias",
    "Community",
    "CommunityMembership",
    "Edge",
    "EdgeEmbedding",
    "EdgeSource",
    "EdgeType",
    "FoldRole",
    "GraphLayout",
    "MergeProposal",
    "ProposalStatus",
    "QueryLog",
    "WorkflowRole",
]
