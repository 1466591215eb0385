"""Workflow use cases as actions: list a bank's processes with their open findings, read or
regenerate a process's gap report, decide on a finding. The REST views, the MCP
``workflow_gaps`` tool and the manager pages all run these; the rules and the report building
stay in :mod:`workflows.services`."""

from __future__ import annotations

from rest_framework import serializers

from kb.actions.base import Action
from kb.models import Entry, Scope
from workflows.models import GapReport, ReportTrigger
from workflows.services import findings as finding_service
from workflows.services.reports import (
    build_report,
    ensure_report,
    process_overview,
    report_findings,
)
from workflows.services.subgraph import find_process

PROCESS_ID = {"process_id": "process_id"}


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


class ListProcesses(Action):
    """The bank's processes with the open findings of their latest gap report; a process never
    reported is reported now."""

    name = "workflows.list"
    summary = "List the bank's processes with their open findings"

    def execute(self):
        return process_overview(self.bank, build_missing=True, actor=self.caller.actor)

    def present(self, summaries) -> list[dict]:
        return [
            {
                "id": s.process.short_id,
                "title": s.process.title,
                "open_findings": s.open_findings,
                "generated_at": s.generated_at.isoformat() if s.generated_at else None,
            }
            for s in summaries
        ]


class ReadGapReport(Action):
    """A process's latest gap report (built now if there is none yet); 404
    ``process_not_found`` for an id that names no process."""

    name = "workflows.gaps"
    summary = "The latest gap report of a process (built now if there is none yet)"
    path_ids = PROCESS_ID

    def execute(self) -> tuple[Entry, GapReport]:
        process = find_process(self.bank, self.ids["process_id"])
        return process, ensure_report(self.bank, process, actor=self.caller.actor)

    def present(self, found) -> dict:
        return gap_report_json(*found)


class NoBody(serializers.Serializer):
    """This request takes no body (an empty object at most)."""


class RegenerateGapReport(ReadGapReport):
    """Build a process's gap report now: on demand (REST, the manager page, the command) or
    for a job (``trigger``: the edit or schedule that asked for it). ``built`` keeps the
    build's counts (new and auto-resolved findings) for the page and the command."""

    name = "workflows.regenerate"
    summary = "Regenerate the gap report of a process now"
    scope = Scope.WRITE
    Input = NoBody
    trigger: str = ReportTrigger.ON_DEMAND

    def execute(self) -> tuple[Entry, GapReport]:
        process = find_process(self.bank, self.ids["process_id"])
        self.built = build_report(self.bank, process, trigger=self.trigger, actor=self.caller.actor)
        return process, self.built.report


def regenerate_report(caller, process: Entry, trigger: str = ReportTrigger.ON_DEMAND):
    """Run :class:`RegenerateGapReport` on ``process`` as ``caller`` (jobs, commands): the
    build (report and counts)."""
    action = RegenerateGapReport(process.bank, caller, ids={"process_id": process.short_id})
    action.trigger = trigger
    with caller.acting():
        action.execute()
    return action.built


class WorkflowGapsQuery(serializers.Serializer):
    process_id = serializers.CharField(
        required=False,
        help_text="The process entry's id: its latest gap report. Without it: the bank's "
        "processes with their open findings counts.",
    )


class WorkflowGaps(Action):
    """The MCP ``workflow_gaps`` tool: one process's gap report, or every process of the bank
    with its open findings count (the two REST reads, as one tool)."""

    name = "workflows.gaps_or_list"
    summary = "A process's gap report, or the bank's processes"
    Query = WorkflowGapsQuery

    def execute(self):
        process_id = self.data.get("process_id")
        if process_id:
            return ReadGapReport(self.bank, self.caller, ids={"process_id": process_id})
        return ListProcesses(self.bank, self.caller)

    def present(self, action: Action):
        return action.present(action.execute())


class FindingDecisionInput(serializers.Serializer):
    action = serializers.CharField(
        allow_blank=True, help_text="acknowledge, accept, resolve, reopen, assign or comment."
    )
    comment = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    assignee = serializers.CharField(required=False, allow_blank=True)


class DecideFinding(Action):
    """Acknowledge, accept, resolve, reopen, assign or comment on one finding (audited)."""

    name = "workflows.finding"
    summary = "Decide on a workflow finding"
    scope = Scope.WRITE
    path_ids = {"process_id": "process_id", "finding_id": "finding_id"}
    Input = FindingDecisionInput

    def execute(self):
        process = find_process(self.bank, self.ids["process_id"])
        finding = finding_service.get_finding(self.bank, process, self.ids["finding_id"])
        return finding_service.change_finding(
            self.bank,
            finding,
            action=self.data["action"],
            actor=self.caller.actor,
            comment=self.data.get("comment", ""),
            assignee=self.data.get("assignee", ""),
        )
