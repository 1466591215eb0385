"""Regenerate workflow gap reports from the command line and print what they found."""

from __future__ import annotations

from django.core.management.base import CommandError
from tqdm import tqdm

from kb import audit
from kb.actions.base import Caller
from kb.management.commands._base import KbCommand
from kb.models import Bank
from workflows.actions import regenerate_report
from workflows.services.reports import report_findings
from workflows.services.subgraph import find_process, processes_of


class Command(KbCommand):
    help = "Regenerate the gap reports of a bank's processes (or one process) and summarise them."
    command_name = "gap_report"

    def add_arguments(self, parser):
        parser.add_argument("bank", help="Bank slug.")
        parser.add_argument("--process", help="One process (short id or key); default: all.")
        parser.add_argument(
            "--show", action="store_true", help="Print every finding's message as well."
        )

    def handle_kb(self, *args, **options):
        bank = Bank.objects.filter(slug=options["bank"]).first()
        if bank is None:
            raise CommandError(f"No bank {options['bank']!r}.")
        if options["process"]:
            processes = [find_process(bank, options["process"])]
        else:
            processes = list(processes_of(bank))
        totals = {"findings": 0, "new": 0, "closed": 0}
        caller = Caller.system(audit.current().actor or "system", via="command")
        for process in tqdm(
            processes, desc="processes", unit="process", disable=len(processes) < 2
        ):
            built = regenerate_report(caller, process)
            report = built.report
            totals["findings"] += report.finding_count
            totals["new"] += built.created
            totals["closed"] += built.auto_resolved
            rules = ", ".join(f"{k} {v}" for k, v in sorted(report.counts_by_rule.items()))
            self.stdout.write(
                f"{process.short_id} {process.title}: {report.finding_count} findings"
                f"{' (' + rules + ')' if rules else ''} in {report.took_ms:.0f} ms."
            )
            if options["show"]:
                for finding in report_findings(report):
                    self.stdout.write(f"  [{finding.status}] {finding.rule}: {finding.message}")
        self.stdout.write(
            f"{len(processes)} processes reported: {totals['findings']} findings, "
            f"{totals['new']} new, {totals['closed']} closed since the previous reports."
        )
