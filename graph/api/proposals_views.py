"""REST of API.md "Merge proposals" (scope ``curate``): list the queue, decide one proposal.
Each view runs one action of :mod:`graph.actions.curation` (the admin queue runs the same)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema

from graph.actions.curation import DecideMergeProposal, ListMergeProposals, proposals_json
from graph.api import schemas as graph_schemas
from kb.api import schemas
from kb.api.actions import respond
from kb.api.views import ERRORS, BankAPIView

__all__ = ["ProposalDecideView", "ProposalListView", "proposals_json"]


class ProposalListView(BankAPIView):
    @extend_schema(
        parameters=[ListMergeProposals.Query],
        responses={200: graph_schemas.ProposalListSerializer, **ERRORS},
        summary=ListMergeProposals.summary,
    )
    def get(self, request, bank: str):
        return respond(ListMergeProposals, request, bank)


class ProposalDecideView(BankAPIView):
    @extend_schema(
        request=DecideMergeProposal.Input,
        responses={
            200: graph_schemas.ProposalDecisionSerializer,
            409: schemas.ErrorEnvelope,
            **ERRORS,
        },
        summary=DecideMergeProposal.summary,
    )
    def post(self, request, bank: str, proposal_id: str):
        return respond(DecideMergeProposal, request, bank, proposal_id=proposal_id)
