"""Reports: snapshots, status carry-over, auto-resolve, reopen, overview and trend."""

from __future__ import annotations

import pytest

from graph.edges.links import unlink
from workflows.models import Finding, FindingEvent, FindingStatus, GapReport, finding_fingerprint
from workflows.services import findings as finding_service
from workflows.services import reports
from workflows.services.reports import build_report, ensure_report, process_overview

pytestmark = pytest.mark.django_db


@pytest.fixture
def holey(flow):
    """Receive → Credit ok? (one branch) → Ship (no owner) → nothing (dead end)."""
    f = flow()
    receive = f.step("Receive order", start=True)
    ok = f.decision("Credit ok?")
    ship = f.step("Ship goods", owner=None)
    f.chain(receive, ok, ship)
    f.steps = dict(receive=receive, ok=ok, ship=ship)
    return f


def rules_of(report: GapReport) -> list[tuple[str, list[str]]]:
    return sorted((f.rule, f.entries) for f in report.findings.all())


def test_build_report_persists_a_snapshot(holey):
    f = holey
    built = build_report(f.bank, f.process, actor="tester")
    report = built.report
    s = f.steps
    assert rules_of(report) == sorted(
        [
            ("dead_end", [s["ship"].short_id]),
            ("single_branch_decision", [s["ok"].short_id]),
            ("unowned_step", [s["ship"].short_id]),
        ]
    )
    assert report.finding_count == 3 and report.open_count == 3 and report.step_count == 3
    assert report.counts_by_rule == {
        "dead_end": 1,
        "single_branch_decision": 1,
        "unowned_step": 1,
    }
    assert report.actor == "tester" and built.created == 3
    finding = Finding.objects.get(rule="dead_end")
    assert finding.fingerprint == finding_fingerprint(
        f.process.short_id, "dead_end", [s["ship"].short_id]
    )
    assert finding.severity == "high" and finding.status == "open"
    assert [e.kind for e in finding.events.all()] == ["detected"]


def test_status_carries_over_and_fixed_findings_close_themselves(holey, manager):
    f = holey
    first = build_report(f.bank, f.process).report
    dead = Finding.objects.get(rule="dead_end")
    unowned = Finding.objects.get(rule="unowned_step")
    finding_service.change_finding(
        f.bank, dead, action="acknowledge", actor="staff:maria", comment="On it."
    )
    finding_service.change_finding(f.bank, unowned, action="assign", actor="x", assignee="maria")

    second = build_report(f.bank, f.process).report
    assert second.pk != first.pk
    dead.refresh_from_db()
    unowned.refresh_from_db()
    assert dead.status == FindingStatus.ACKNOWLEDGED and dead.comment == "On it."
    assert unowned.assignee == manager
    assert {x.pk for x in second.findings.all()} == {x.pk for x in first.findings.all()}
    assert second.open_count == 2

    # Fix the dead end: the finding resolves itself, recorded; the others stay.
    f.link(f.steps["ship"], f.step("Close", terminal=True), "precedes")
    built = build_report(f.bank, f.process)
    dead.refresh_from_db()
    assert dead.status == FindingStatus.RESOLVED and dead.resolved_at is not None
    assert built.auto_resolved == 1 and built.report.resolved_count == 1
    assert dead not in built.report.findings.all()
    last = dead.events.order_by("-at", "-id").first()
    assert last.kind == "auto_resolved" and last.actor == reports.SYSTEM_ACTOR
    assert last.from_status == "acknowledged" and last.to_status == "resolved"
    assert last.report == built.report
    assert f"report #{built.report.pk}" in last.comment
    # Its history is intact: detected, acknowledged, auto-resolved.
    assert [e.kind for e in dead.events.order_by("at", "id")] == [
        "detected",
        "status",
        "auto_resolved",
    ]


def test_a_resolved_finding_that_comes_back_reopens_with_its_history(holey):
    f = holey
    build_report(f.bank, f.process)
    edge = f.link(f.steps["ship"], f.step("Close", terminal=True), "precedes")
    build_report(f.bank, f.process)
    dead = Finding.objects.get(rule="dead_end")
    assert dead.status == "resolved"
    unlink(f.bank, edge.pk, "the close step was a mistake")
    built = build_report(f.bank, f.process)
    dead.refresh_from_db()
    assert dead.status == "open" and dead.resolved_at is None
    assert built.reopened == 1 and dead in built.report.findings.all()
    assert Finding.objects.filter(rule="dead_end").count() == 1
    assert [e.kind for e in dead.events.order_by("at", "id")] == [
        "detected",
        "auto_resolved",
        "reopened",
    ]


def test_a_manually_resolved_finding_still_present_is_reopened(holey):
    f = holey
    build_report(f.bank, f.process)
    dead = Finding.objects.get(rule="dead_end")
    finding_service.change_finding(f.bank, dead, action="resolve", actor="staff:maria")
    build_report(f.bank, f.process)
    dead.refresh_from_db()
    assert dead.status == "open"
    assert dead.events.order_by("-id").first().kind == "reopened"


def test_accepted_findings_stay_accepted(holey):
    f = holey
    build_report(f.bank, f.process)
    single = Finding.objects.get(rule="single_branch_decision")
    finding_service.change_finding(
        f.bank, single, action="accept", actor="staff:maria", comment="Rejections go by phone."
    )
    for _ in range(2):
        report = build_report(f.bank, f.process).report
    single.refresh_from_db()
    assert single.status == "accepted"
    assert report.open_count == 2


def test_build_cost_does_not_grow_with_the_process(flow, django_assert_max_num_queries):
    small = flow("Small")
    steps = [small.step(f"S{i}", owner=None) for i in range(3)]
    small.chain(*steps)
    build_report(small.bank, small.process)  # first build creates every finding
    large = flow("Large")
    steps = [large.step(f"L{i}", owner=None) for i in range(30)]
    large.chain(*steps)
    build_report(large.bank, large.process)
    with django_assert_max_num_queries(22) as small_ctx:
        build_report(small.bank, small.process)
    with django_assert_max_num_queries(22) as large_ctx:
        build_report(large.bank, large.process)
    assert len(large_ctx.captured_queries) == len(small_ctx.captured_queries)


def test_old_snapshots_are_pruned(holey, monkeypatch):
    monkeypatch.setattr(reports, "REPORTS_KEPT", 3)
    f = holey
    made = [build_report(f.bank, f.process).report.pk for _ in range(5)]
    assert (
        list(GapReport.objects.filter(process=f.process).values_list("pk", flat=True))
        == (made[::-1][:3])
    )
    assert Finding.objects.filter(process=f.process).count() == 3  # findings outlive snapshots
    assert FindingEvent.objects.filter(finding__process=f.process).count() == 3


def test_ensure_report_builds_only_the_first(holey):
    f = holey
    first = ensure_report(f.bank, f.process)
    assert first.trigger == "first_view"
    assert ensure_report(f.bank, f.process) == first


def test_overview_counts_and_trend(holey, healthy):
    f = holey
    overview = {s.process.pk: s for s in process_overview(f.bank, build_missing=True)}
    assert set(overview) == {f.process.pk, healthy.process.pk}
    assert overview[healthy.process.pk].open_findings == 0
    assert overview[f.process.pk].open_findings == 3
    finding_service.change_finding(
        f.bank, Finding.objects.get(rule="dead_end"), action="acknowledge", actor="m"
    )
    build_report(f.bank, f.process)
    f.own(f.steps["ship"], "Warehouse")
    build_report(f.bank, f.process)
    summary = {s.process.pk: s for s in process_overview(f.bank)}[f.process.pk]
    assert summary.trend == [3, 2, 1]
    assert summary.open_findings == 1 and summary.acknowledged == 1
    assert summary.generated_at == summary.report.generated_at


def test_overview_is_a_fixed_number_of_queries(flow, django_assert_num_queries, bank):
    for i in range(4):
        f = flow(f"P{i}")
        f.step("A", start=True, terminal=True)
        build_report(f.bank, f.process)
        build_report(f.bank, f.process)
    with django_assert_num_queries(4):
        rows = process_overview(bank, build_missing=True)
    assert len(rows) == 4 and all(len(r.trend) == 2 for r in rows)


def test_reports_stay_in_their_bank(flow, other_bank, make_entry):
    f = flow()
    f.step("A", start=True, terminal=True)
    outsider = make_entry("Outsider process", in_bank=other_bank, kind="process")
    with pytest.raises(ValueError):
        build_report(f.bank, outsider)
    assert process_overview(other_bank, build_missing=True)[0].process == outsider
