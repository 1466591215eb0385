"""The demo business bank: imports cleanly and shows its real holes at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb.models import Bank, Entry
from kb.services.bulk import import_bank
from workflows.services.reports import build_report, process_overview
from workflows.services.subgraph import find_process, load_process_graph

pytestmark = pytest.mark.django_db
DEMO = Path(__file__).resolve().parents[2] / "kb" / "demo" / "business.jsonl"


@pytest.fixture
def business(db):
    bank = Bank.objects.create(slug="biz", name="Larkspur Freight business", kind="business")
    import_bank(bank, DEMO.read_text(encoding="utf-8"), reason="demo")
    return bank


def findings_of(bank, key):
    process = find_process(bank, key)
    report = build_report(bank, process).report
    titles = dict(Entry.objects.filter(bank=bank).values_list("short_id", "title"))
    return sorted((f.rule, titles[f.entries[0]]) for f in report.findings.all())


def test_demo_bank_size_and_reimport_changes_nothing(business):
    assert 40 <= Entry.objects.filter(bank=business).count() <= 60
    again = import_bank(business, DEMO.read_text(encoding="utf-8"), reason="demo again")
    assert again["created"] == 0 and again.get("edges_created", 0) == 0
    assert again["unchanged"] == 54 and again["edges_unchanged"] == 110


def test_order_to_cash_holes(business):
    assert findings_of(business, "process:order-to-cash") == [
        ("single_branch_decision", "Credit approved?"),
        ("unowned_step", "Send invoice to customer"),
        ("unproduced_requirement", "Signed rate agreement"),
    ]


def test_offboarding_holes(business):
    assert findings_of(business, "process:offboarding") == [
        ("dead_end", "Collect company laptop and badge"),
        ("unreachable_step", "Close employee record"),
        ("unreachable_step", "Run final payroll"),
    ]


def test_the_bank_relation_with_a_precedes_role_carries_flow(business):
    process = find_process(business, "process:order-to-cash")
    graph = load_process_graph(business, process)
    confirm = Entry.objects.get(bank=business, key="step:o2c-confirm-order")
    schedule = Entry.objects.get(bank=business, key="step:o2c-schedule-pickup")
    assert graph.successors(confirm.pk) == [schedule.pk]  # via hands_off_to


def test_overview_of_the_demo_bank(business):
    rows = {r.process.title: r for r in process_overview(business, build_missing=True)}
    assert {t: r.open_findings for t, r in rows.items()} == {
        "Employee offboarding": 3,
        "Order to cash": 3,
    }


def test_decision_branches_are_labelled_in_the_drawing(business):
    from workflows.services.diagram import render_diagram
    from workflows.services.subgraph import branch_words, load_process_graph

    process = find_process(business, "process:order-to-cash")
    graph = load_process_graph(business, process)
    svg = render_diagram(graph, [], link_base="/p/").svg
    # The demo's decision edges carry "Yes: …" / "No: …" notes: the branches read Yes / No.
    assert ">Yes</text>" in svg and ">No</text>" in svg
    assert branch_words("", "Yes: payment received by the due date.") == "Yes"
    assert branch_words("approved", "whatever") == "approved"
    assert branch_words("", "the order goes on to be confirmed") == "the order goes on…"
