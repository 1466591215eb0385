"""The graph's models, one module per concept (app label ``graph``).

- ``edges``: edge types (the relation vocabulary), bi-temporal typed edges, aliases.
- ``proposals``: merge proposals waiting for a curator.
- ``querylog``: every query as asked and answered.
- ``analytics``: derived data (communities, edge-note vectors), recomputed wholesale.
- ``layout``: the cached picture of a bank (server-side layout positions).
- ``extraction``: edge proposals read from prose, and the extraction watermark.
"""

from graph.models.analytics import Community, CommunityMembership, EdgeEmbedding
from graph.models.edges import Alias, Edge, EdgeSource, EdgeType, FoldRole, WorkflowRole
from graph.models.extraction import EdgeProposal, EdgeProposalStatus, ExtractionState
from graph.models.layout import GraphLayout, ViewLayout
from graph.models.proposals import MergeProposal, ProposalStatus
from graph.models.querylog import QueryLog

__all__ = [
    "Alias",
    "Community",
    "CommunityMembership",
    "Edge",
    "EdgeEmbedding",
    "EdgeProposal",
    "EdgeProposalStatus",
    "EdgeSource",
    "EdgeType",
    "ExtractionState",
    "FoldRole",
    "GraphLayout",
    "MergeProposal",
    "ProposalStatus",
    "QueryLog",
    "ViewLayout",
    "WorkflowRole",
]
