"""REST views of workflow gap reports (API.md "Workflows"): each runs one action of
:mod:`workflows.actions`."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema

from kb.api.actions import respond
from kb.api.views import ERRORS, BankAPIView
from workflows.actions import ListProcesses, ReadGapReport, RegenerateGapReport
from workflows.api import schemas

PROCESS_ID = OpenApiParameter(
    "process_id", str, OpenApiParameter.PATH, description="The process entry's short id."
)


class WorkflowListView(BankAPIView):
    """The bank's processes (entries of kind ``process``) with the open findings of their latest
    gap report; a process never reported is reported now."""

    @extend_schema(
        tags=["workflows"],
        responses={200: schemas.ProcessListItemSerializer(many=True), **ERRORS},
        summary=ListProcesses.summary,
    )
    def get(self, request, bank: str):
        return respond(ListProcesses, request, bank)


class WorkflowGapsView(BankAPIView):
    """A process's gap report: dead ends, decisions with one branch, requirements nothing
    produces, unowned and unreachable steps, loops without an exit. ``id`` is the process
    entry's short id; 404 ``process_not_found`` for anything else."""

    @extend_schema(
        tags=["workflows"],
        parameters=[PROCESS_ID],
        responses={200: schemas.GapReportSerializer, **ERRORS},
        summary=ReadGapReport.summary,
    )
    def get(self, request, bank: str, process_id: str):
        return respond(ReadGapReport, request, bank, process_id=process_id)

    @extend_schema(
        tags=["workflows"],
        parameters=[PROCESS_ID],
        request=None,
        responses={200: schemas.GapReportSerializer, **ERRORS},
        summary=RegenerateGapReport.summary,
    )
    def post(self, request, bank: str, process_id: str):
        return respond(RegenerateGapReport, request, bank, process_id=process_id)


@extend_schema(exclude=True)
class WorkflowListAliasView(WorkflowListView):
    """``.../workflows`` without the trailing slash answers the same (no redirect for agents)."""


@extend_schema(exclude=True)
class WorkflowGapsAliasView(WorkflowGapsView):
    """``.../gaps/`` with a trailing slash answers the same."""
