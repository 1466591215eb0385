"""The six rules on small graphs: each finds its hole, none fires on a healthy process."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from graph.edges.links import invalidate, unlink
from graph.models import EdgeType, WorkflowRole
from kb.models import EntryStatus
from workflows.services import rules
from workflows.services.subgraph import find_process, load_process_graph

pytestmark = pytest.mark.django_db


def gaps_of(f, rule=None):
    graph = load_process_graph(f.bank, f.process)
    found = rules.evaluate(graph) if rule is None else rules.RULES[rule](graph)
    return found


def test_healthy_process_has_no_findings(healthy):
    assert gaps_of(healthy) == []


def test_loading_a_process_is_a_fixed_handful_of_queries(healthy, django_assert_max_num_queries):
    with django_assert_max_num_queries(6):
        graph = load_process_graph(healthy.bank, healthy.process)
    assert len(graph.steps) == 8


def test_dead_end_step_and_decision(healthy):
    f = healthy
    stuck = f.step("Verify insurance")
    f.link(f.steps["ship"], stuck, "precedes")
    nowhere = f.decision("Insured?")
    f.link(stuck, nowhere, "precedes")
    found = gaps_of(f, "dead_end")
    assert [g.entries for g in found] == [(nowhere.short_id,)]
    assert found[0].message.startswith("Decision 'Insured?' leads nowhere")
    f.link(nowhere, f.steps["paid"], "precedes")
    f.link(nowhere, f.steps["reject"], "precedes")
    assert gaps_of(f, "dead_end") == []
    # A plain step with no successor that is not terminal:
    lonely = f.step("Archive papers")
    f.link(f.steps["close"], lonely, "precedes")
    (gap,) = gaps_of(f, "dead_end")
    assert gap.entries == (lonely.short_id,)
    assert gap.message == (
        "Step 'Archive papers' has no successor and is not marked terminal: work stops here. "
        "Add the next step, or mark it as an end (tick “Ends its process” on its entry page) "
        "if the process really ends here."
    )
    assert gap.severity == "high"


def test_single_branch_decision(flow):
    f = flow()
    start = f.step("Receive order", start=True)
    ok = f.decision("Credit approved?")
    confirm = f.step("Confirm order", terminal=True)
    f.chain(start, ok, confirm)
    (gap,) = gaps_of(f, "single_branch_decision")
    assert gap.entries == (ok.short_id,)
    assert gap.related == (confirm.short_id,)
    assert "'Credit approved?' has only one branch (to 'Confirm order')" in gap.message
    # Not a dead end: it does lead somewhere.
    assert gaps_of(f, "dead_end") == []
    f.link(ok, f.step("Put order on hold", terminal=True), "precedes")
    assert gaps_of(f, "single_branch_decision") == []


def test_unproduced_requirement(flow):
    f = flow()
    start = f.step("Receive order", start=True)
    invoice = f.step("Issue invoice", terminal=True)
    f.chain(start, invoice)
    agreement = f.artifact("Signed rate agreement")
    f.link(invoice, agreement, "requires")
    f.link(start, agreement, "requires")
    (gap,) = gaps_of(f, "unproduced_requirement")
    assert gap.entries == (agreement.short_id,)
    assert set(gap.related) == {start.short_id, invoice.short_id}
    assert gap.message.startswith(
        "'Signed rate agreement' is required by 'Issue invoice' and 'Receive order' but no step "
        "produces it"
    )
    f.link(start, agreement, "produces")
    assert gaps_of(f, "unproduced_requirement") == []


def test_external_requirement_and_one_produced_by_another_process(flow):
    f = flow()
    start = f.step("Receive order", start=True, terminal=True)
    f.link(start, f.artifact("Customer PO", external=True), "requires")
    contract = f.artifact("Contract", member=False)
    f.link(start, contract, "requires")
    assert [g.entries for g in gaps_of(f, "unproduced_requirement")] == [(contract.short_id,)]
    sales = flow("Sales")
    sign = sales.step("Sign contract", start=True, terminal=True)
    sales.link(sign, contract, "produces")
    assert gaps_of(f, "unproduced_requirement") == []


def test_unowned_step(healthy):
    f = healthy
    send = f.step("Send invoice", owner=None)
    f.link(f.steps["ship"], send, "precedes")
    f.link(send, f.steps["paid"], "precedes")
    (gap,) = gaps_of(f, "unowned_step")
    assert gap.entries == (send.short_id,)
    assert gap.message.startswith("Step 'Send invoice' has no owner")
    f.own(send, "Billing")
    assert gaps_of(f, "unowned_step") == []


def test_unreachable_step(healthy):
    f = healthy
    payroll = f.step("Run final payroll")
    archive = f.step("Archive", terminal=True)
    f.chain(payroll, archive)
    found = gaps_of(f, "unreachable_step")
    assert sorted(g.entries for g in found) == sorted([(payroll.short_id,), (archive.short_id,)])
    f.link(f.steps["close"], payroll, "precedes")
    assert gaps_of(f, "unreachable_step") == []


def test_process_without_start_is_one_finding_about_the_process(flow):
    f = flow("No start")
    a = f.step("A")
    b = f.step("B", terminal=True)
    f.chain(a, b)
    (gap,) = gaps_of(f, "unreachable_step")
    assert gap.entries == (f.process.short_id,)
    assert set(gap.related) == {a.short_id, b.short_id}
    assert "has no start step" in gap.message


def test_loop_without_exit(flow):
    f = flow()
    start = f.step("Start", start=True)
    a, b, c = f.step("Review"), f.step("Revise"), f.step("Resubmit")
    f.chain(start, a, b, c, a)
    (gap,) = gaps_of(f, "loop_without_exit")
    assert gap.entries == tuple(sorted(x.short_id for x in (a, b, c)))
    assert "there is no way out of it" in gap.message
    # An exit that only leads to a dead end does not help ...
    out = f.step("Give up")
    f.link(b, out, "precedes")
    (gap,) = gaps_of(f, "loop_without_exit")
    assert "its ways out only lead to steps that never finish" in gap.message
    # ... a path to a terminal step does.
    f.link(out, f.step("Closed", terminal=True), "precedes")
    assert gaps_of(f, "loop_without_exit") == []


def test_hand_off_to_another_process_is_a_way_out(flow):
    f = flow()
    start = f.step("Start", start=True)
    a, b = f.step("Ask"), f.step("Answer")
    f.chain(start, a, b, a)
    other = flow("Fulfilment")
    receive = other.step("Receive from sales", start=True, terminal=True)
    f.link(b, receive, "precedes")
    assert gaps_of(f, "loop_without_exit") == []
    assert gaps_of(f, "dead_end") == []


def test_bank_defined_relation_with_a_workflow_role_takes_part(flow, bank):
    EdgeType.objects.create(bank=bank, name="hands_off_to", workflow_role=WorkflowRole.PRECEDES)
    EdgeType.objects.create(bank=bank, name="run_by", workflow_role=WorkflowRole.OWNED_BY)
    f = flow()
    a = f.step("Sales", start=True, owner=None)
    b = f.step("Dispatch", terminal=True)
    f.link(a, b, "hands_off_to")
    f.link(a, f.entry("Sales team", "team"), "run_by")
    assert gaps_of(f) == []


def test_relations_without_a_workflow_role_do_not_count(flow):
    f = flow()
    a = f.step("A", start=True)
    b = f.step("B", terminal=True)
    f.link(a, b, "see_also")
    found = {g.rule for g in gaps_of(f)}
    assert found == {"dead_end", "unreachable_step"}


def test_only_current_edges_count(flow):
    f = flow()
    a = f.step("A", start=True)
    b = f.step("B", terminal=True)
    edge = f.link(a, b, "precedes")
    assert gaps_of(f) == []
    unlink(f.bank, edge.pk, "wrong order")
    assert {g.rule for g in gaps_of(f)} == {"dead_end", "unreachable_step"}
    # An edge whose valid time ended is not current either.
    edge = f.link(a, b, "precedes")
    invalidate(f.bank, edge.pk, (timezone.now() - dt.timedelta(seconds=1)).isoformat(), "ended")
    assert {g.rule for g in gaps_of(f)} == {"dead_end", "unreachable_step"}
    # Nor one that starts in the future.
    f.link(a, b, "precedes", valid_from=(timezone.now() + dt.timedelta(days=3)).isoformat())
    assert {g.rule for g in gaps_of(f)} == {"dead_end", "unreachable_step"}


def test_retired_members_take_no_part(flow):
    f = flow()
    a = f.step("A", start=True, terminal=True)
    old = f.step("Old step")
    old.status = EntryStatus.RETIRED
    old.save()
    graph = load_process_graph(f.bank, f.process)
    assert graph.steps == [a.pk]
    assert gaps_of(f) == []


def test_find_process_refuses_other_kinds_and_banks(flow, bank, other_bank):
    from kb.errors import NotFound

    f = flow()
    step = f.step("A", start=True)
    assert find_process(bank, f.process.short_id) == f.process
    for ref in (step.short_id, "nope", "deadbeef"):
        with pytest.raises(NotFound) as exc:
            find_process(bank, ref)
        assert exc.value.code == "process_not_found"
    with pytest.raises(NotFound):
        find_process(other_bank, f.process.short_id)


def test_messages_name_at_most_five_steps():
    nodes = [rules.FlowNode(i, f"{i:08x}", f"S{i}", "step", True) for i in range(7)]
    assert rules._names(nodes[:1]) == "'S0'"
    assert rules._names(nodes[:3]) == "'S0', 'S1' and 'S2'"
    assert rules._names(nodes) == "'S0', 'S1', 'S2', 'S3', 'S4' and 2 more"
