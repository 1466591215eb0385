"""REST of API.md "Merge proposals" (scope ``curate``): list the queue, decide one proposal.
Thin: parse, call :mod:`graph.curation.decisions` (the service the admin queue calls too),
render."""

from __future__ import annotations

import base64
import json

from django.db.models import Q
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from graph.api import schemas as graph_schemas
from graph.curation import decisions
from graph.models import Alias, MergeProposal
from kb.api import schemas
from kb.api.auth import actor_for, bank_for
from kb.api.errors import ApiError
from kb.api.params import int_param, int_query, reject_unknown
from kb.api.views import ERRORS, BankAPIView
from kb.models import Entry, Scope

DEFAULT_PAGE = 50
MAX_PAGE = 200
DECIDE_FIELDS = {"decision", "keep", "reason"}


def _reasons(reasons: dict) -> list[str]:
    """The scoring evidence of a proposal as short sentences."""
    out = []
    if reasons.get("verdict"):
        out.append(str(reasons["verdict"]))
    for key, label in (
        ("cosine", "content cosine"),
        ("name_similarity", "name similarity"),
        ("neighbour_jaccard", "shared-neighbour Jaccard"),
    ):
        if reasons.get(key) is not None:
            out.append(f"{label} {reasons[key]}")
    if reasons.get("shared_tokens"):
        out.append("shared title words: " + ", ".join(reasons["shared_tokens"]))
    if reasons.get("linked_as"):
        out.append("already linked as: " + ", ".join(reasons["linked_as"]))
    return out


def _end(entry: Entry, aliases: dict[int, list[str]]) -> dict:
    return {
        "id": entry.short_id,
        "title": entry.title,
        "kind": entry.kind.name,
        "status": entry.status,
        "aliases": aliases.get(entry.pk, []),
    }


def proposals_json(proposals: list[MergeProposal]) -> list[dict]:
    """Proposals in the API shape; aliases of every end read in one statement."""
    ids = {p.keep_id for p in proposals} | {p.away_id for p in proposals}
    aliases: dict[int, list[str]] = {}
    for entry_id, surface in (
        Alias.objects.filter(entry_id__in=ids)
        .order_by("surface")
        .values_list("entry_id", "surface")
    ):
        aliases.setdefault(entry_id, []).append(surface)
    out = []
    for p in proposals:
        decided = (p.reasons or {}).get("decision") or {}
        out.append(
            {
                "id": p.pk,
                "status": decisions.API_STATUS.get(p.status, p.status),
                "score": p.score,
                "reasons": _reasons(p.reasons or {}),
                "a": _end(p.keep, aliases),
                "b": _end(p.away, aliases),
                "decided_by": p.decided_by or None,
                "decided_at": p.decided_at.isoformat() if p.decided_at else None,
                "decision_reason": decided.get("reason") or None,
                "operation": p.operation_id,
            }
        )
    return out


def _encode(score: float, pk: int) -> str:
    return base64.urlsafe_b64encode(json.dumps([score, pk]).encode()).decode().rstrip("=")


def _decode(cursor: str) -> tuple[float, int]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        score, pk = json.loads(base64.urlsafe_b64decode(padded.encode()))
        return float(score), int(pk)
    except (ValueError, TypeError, json.JSONDecodeError, UnicodeDecodeError):
        raise ApiError(
            400, "invalid_cursor", "cursor is not one this API returned.", {"cursor": "Invalid."}
        ) from None


class ProposalListView(BankAPIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "status",
                {"type": "string", "enum": ["", "open", "approved", "rejected", "unclear"]},
                description="open, approved, rejected or unclear.",
            ),
            int_query("limit", DEFAULT_PAGE, 1, MAX_PAGE),
            OpenApiParameter("cursor", str, description="The `next` of the previous page."),
        ],
        responses={200: graph_schemas.ProposalListSerializer, **ERRORS},
        summary="The merge proposal queue, best score first (scope curate)",
    )
    def get(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.CURATE)
        limit = int_param(request, "limit", DEFAULT_PAGE, 1, MAX_PAGE)
        qs = decisions.list_proposals(bank_obj, request.query_params.get("status"))
        cursor = request.query_params.get("cursor")
        if cursor:
            score, pk = _decode(cursor)
            qs = qs.filter(Q(score__lt=score) | Q(score=score, pk__gt=pk))
        page = list(qs[: limit + 1])
        more = len(page) > limit
        page = page[:limit]
        return Response(
            {
                "results": proposals_json(page),
                "next": _encode(page[-1].score, page[-1].pk) if more else None,
            }
        )


class ProposalDecideView(BankAPIView):
    @extend_schema(
        request=graph_schemas.ProposalDecideSerializer,
        responses={
            200: graph_schemas.ProposalDecisionSerializer,
            409: schemas.ErrorEnvelope,
            **ERRORS,
        },
        summary="Decide a merge proposal: approve (merges), reject or unclear (scope curate)",
    )
    def post(self, request, bank: str, proposal_id: str):
        bank_obj = bank_for(request, bank, Scope.CURATE)
        body = self.json_body(request)
        reject_unknown(body, DECIDE_FIELDS)
        keep = body.get("keep")
        if keep is not None and not isinstance(keep, str):
            raise ApiError(400, "invalid_input", "keep must be an entry id.", {"keep": "A string."})
        reason = body.get("reason", "")
        if not isinstance(reason, str):
            raise ApiError(400, "invalid_input", "reason must be text.", {"reason": "A string."})
        result = decisions.decide_proposal(
            bank_obj,
            proposal_id,
            body.get("decision"),
            keep=keep,
            reason=reason,
            actor=actor_for(request),
        )
        proposal = MergeProposal.objects.select_related("keep__kind", "away__kind").get(
            pk=result.proposal.pk
        )
        return Response(
            {
                "proposal": proposals_json([proposal])[0],
                "operation": result.operation.pk if result.operation else None,
            }
        )
