"""REST views of workflow gap reports (API.md "Workflows"): thin — resolve, call a service, render."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from kb.api.auth import actor_for, bank_for
from kb.api.errors import ApiError
from kb.api.views import ERRORS, BankAPIView
from kb.models import Entry, Scope
from workflows.api import schemas
from workflows.models import GapReport, ReportTrigger
from workflows.services.reports import (
    build_report,
    ensure_report,
    process_overview,
    report_findings,
)
from workflows.services.subgraph import find_process

PROCESS_ID = OpenApiParameter(
    "process_id", str, OpenApiParameter.PATH, description="The process entry's short id."
)


def gap_report_json(process: Entry, report: GapReport) -> dict:
    """The body of GET/POST .../workflows/{id}/gaps."""
    return {
        "process": {"id": process.short_id, "title": process.title},
        "generated_at": report.generated_at.isoformat(),
        "report": report.pk,
        "findings": [
            {
                "id": f.pk,
                "rule": f.rule,
                "entries": list(f.entries),
                "message": f.message,
                "status": f.status,
                "severity": f.severity,
                "related": list(f.related),
            }
            for f in report_findings(report)
        ],
    }


class WorkflowListView(BankAPIView):
    """The bank's processes (entries of kind ``process``) with the open findings of their latest
    gap report; a process never reported is reported now."""

    @extend_schema(
        tags=["workflows"],
        responses={200: schemas.ProcessListItemSerializer(many=True), **ERRORS},
        summary="List the bank's processes with their open findings",
    )
    def get(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        summaries = process_overview(bank_obj, build_missing=True, actor=actor_for(request))
        return Response(
            [
                {
                    "id": s.process.short_id,
                    "title": s.process.title,
                    "open_findings": s.open_findings,
                    "generated_at": s.generated_at.isoformat() if s.generated_at else None,
                }
                for s in summaries
            ]
        )


class WorkflowGapsView(BankAPIView):
    """A process's gap report: dead ends, decisions with one branch, requirements nothing
    produces, unowned and unreachable steps, loops without an exit. ``id`` is the process
    entry's short id; 404 ``process_not_found`` for anything else."""

    @extend_schema(
        tags=["workflows"],
        parameters=[PROCESS_ID],
        responses={200: schemas.GapReportSerializer, **ERRORS},
        summary="The latest gap report of a process (built now if there is none yet)",
    )
    def get(self, request, bank: str, process_id: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        process = find_process(bank_obj, process_id)
        report = ensure_report(bank_obj, process, actor=actor_for(request))
        return Response(gap_report_json(process, report))

    @extend_schema(
        tags=["workflows"],
        parameters=[PROCESS_ID],
        request=None,
        responses={200: schemas.GapReportSerializer, **ERRORS},
        summary="Regenerate the gap report of a process now",
    )
    def post(self, request, bank: str, process_id: str):
        bank_obj = bank_for(request, bank, Scope.WRITE)
        body = request.data if request.data else {}
        if not isinstance(body, dict):
            raise ApiError(400, "invalid_body", "The body must be empty or a JSON object.")
        if body:
            unknown = sorted(body)
            raise ApiError(
                400,
                "invalid_input",
                f"Unknown fields: {', '.join(unknown)}; this request takes no body.",
                dict.fromkeys(unknown, "Unknown field."),
            )
        process = find_process(bank_obj, process_id)
        built = build_report(
            bank_obj, process, trigger=ReportTrigger.ON_DEMAND, actor=actor_for(request)
        )
        return Response(gap_report_json(process, built.report))


@extend_schema(exclude=True)
class WorkflowListAliasView(WorkflowListView):
    """``.../workflows`` without the trailing slash answers the same (no redirect for agents)."""


@extend_schema(exclude=True)
class WorkflowGapsAliasView(WorkflowGapsView):
    """``.../gaps/`` with a trailing slash answers the same."""
