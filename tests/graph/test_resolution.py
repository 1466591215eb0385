"""Entity resolution: ambiguous names are data, bare names prefer entities, abstention."""

from __future__ import annotations

import json

import pytest

from graph.curation.merge import merge_entries
from graph.curation.revert import revert_operation
from graph.models import Alias
from graph.resolution.aliases import add_alias, resolve, surface_score
from kb.models import EntryKind
from kb.services.bulk import import_bank

pytestmark = pytest.mark.django_db


def test_a_form_naming_two_entries_answers_ambiguous_with_both(bank, make_entry):
    north = make_entry("Dispatch API (north region)", key="api:dispatch-north", kind="service")
    south = make_entry("Dispatch API (south region)", key="api:dispatch-south", kind="service")
    add_alias(bank, north, "Dispatch API")
    add_alias(bank, south, "Dispatch API")
    add_alias(bank, south, "dispatch api")  # the same pair again is a no-op
    assert Alias.objects.filter(bank=bank, normalized="dispatch api").count() == 2
    result = resolve(bank, "Dispatch API")
    assert (result.status, result.matched, result.entry) == ("ambiguous", "alias", None)
    assert {c["id"] for c in result.candidates} == {north.short_id, south.short_id}
    assert {(c["kind"], c["key"]) for c in result.candidates} == {
        ("service", "api:dispatch-north"),
        ("service", "api:dispatch-south"),
    }


def test_merging_two_candidates_leaves_one_and_revert_restores_the_ambiguity(bank, make_entry):
    a, b = make_entry("Jordan Lee", kind="person"), make_entry("Jordan Smith", kind="person")
    add_alias(bank, a, "Jordan")
    add_alias(bank, b, "Jordan")
    assert resolve(bank, "jordan").status == "ambiguous"
    merge = merge_entries(bank, a.short_id, b.short_id, "one person, two records")
    after = resolve(bank, "Jordan")
    assert (after.status, after.entry) == ("resolved", a)
    assert Alias.objects.filter(bank=bank, normalized="jordan").count() == 1
    revert_operation(bank, merge.operation.pk, "two people after all")
    again = resolve(bank, "Jordan")
    assert again.status == "ambiguous"
    assert {c["id"] for c in again.candidates} == {a.short_id, b.short_id}


def test_import_accepts_a_form_that_names_several_entries(bank):
    lines = [
        {"type": "entry", "key": "pkg:aspell-en", "title": "aspell-en", "kind": "service"},
        {"type": "entry", "key": "pkg:aspell-fr", "title": "aspell-fr", "kind": "service"},
        {"type": "alias", "entry": "pkg:aspell-en", "alias": "aspell-dictionary"},
        {"type": "alias", "entry": "pkg:aspell-fr", "alias": "aspell-dictionary"},
    ]
    body = "\n".join(json.dumps(line) for line in lines) + "\n"
    import_bank(bank, body)
    import_bank(bank, body)  # re-importing changes nothing
    assert Alias.objects.filter(bank=bank, normalized="aspell dictionary").count() == 2
    result = resolve(bank, "aspell-dictionary")
    assert result.status == "ambiguous" and len(result.candidates) == 2


def test_traverse_from_an_ambiguous_name_is_ambiguous_start(bank, make_entry, client_rw):
    one, two = make_entry("Dispatch one"), make_entry("Dispatch two")
    add_alias(bank, one, "dispatcher")
    add_alias(bank, two, "dispatcher")
    response = client_rw.post(
        "/api/v1/banks/acme/traverse",
        {"start": {"name": "dispatcher"}, "relations": ["cites"]},
        format="json",
    )
    assert response.status_code == 400
    body = response.json()["error"]
    assert body["code"] == "ambiguous_start"
    assert {c["id"] for c in body["candidates"]} == {one.short_id, two.short_id}


def test_bare_name_prefers_the_entity_over_documents_that_mention_it(bank, make_entry):
    billing = make_entry("Billing service", kind="service")
    make_entry("Billing retries runbook", kind="recipe")
    make_entry("Billing export gotcha", kind="gotcha")
    make_entry("Billing invoices policy", kind="policy")
    checkout = make_entry("Checkout", key="service:checkout", kind="service")
    make_entry("Checkout flakiness lesson", kind="lesson")
    for text, expected in (("billing", billing), ("checkout", checkout)):
        result = resolve(bank, text)
        assert (result.status, result.entry) == ("resolved", expected), (text, result)


def test_entity_flag_is_vocabulary_data(bank, make_entry):
    EntryKind.objects.create(bank=bank, name="vendor", weight=1, entity=True)
    vendor = make_entry("Acme Freight", kind="vendor")
    make_entry("Acme Freight invoice dispute recipe", kind="recipe")
    assert resolve(bank, "acme freight").entry == vendor


def test_abstention_no_candidates_below_the_floor(bank, make_entry):
    make_entry("Ledger reconciliation recipe", kind="recipe")
    make_entry("Reports service", kind="service")
    assert resolve(bank, "zzzz-nothing").status == "not_found"
    assert resolve(bank, "quantum teleporter").status == "not_found"
    ledger = resolve(bank, "ledger")
    assert ledger.status != "resolved"  # one word of a three-word recipe title is no name


def test_a_close_runner_up_never_resolves_silently(bank, make_entry):
    make_entry("Payments gateway", kind="service")
    make_entry("Payment gateways", kind="service")
    result = resolve(bank, "payments gateways")
    assert result.status == "ambiguous" and len(result.candidates) == 2


def test_surface_score_shapes():
    assert surface_score("billing", "billing") == 100
    generic = {"service"}
    # The kind's own word does not dilute the cover; extra real words do.
    assert surface_score("billing", "billing service", generic) > surface_score(
        "billing", "billing retries runbook"
    )
    assert surface_score("reports servce", "reports service") >= 90  # a typo still matches
    assert surface_score("ledger", "ledger reconciliation recipe") < 88


def test_labelled_set_of_two_domains():
    """Resolve on the labelled set of bench/resolve.py: precision first, then abstention."""
    from kb.models import Bank
    from tests.labs.resolve_eval import domains, evaluate, load_domain

    for name, spec in domains().items():
        bank = Bank.objects.create(slug=f"resolve-{name}", name=name)
        score = evaluate(bank, spec, load_domain(bank, spec))
        assert score.precision >= 0.95, (name, score.misses)
        assert score.recall >= 0.9 and score.abstention >= 0.9, (name, score.misses)


def test_an_exact_title_is_exact_whatever_its_case_and_spacing(bank, make_entry):
    entry = make_entry("Route Optimiser")
    for form in ("Route Optimiser", "  route   OPTIMISER "):
        result = resolve(bank, form)
        assert (result.status, result.matched, result.entry) == ("resolved", "exact", entry)


def test_a_key_is_exact_up_to_case(bank, make_entry):
    entry = make_entry("Billing", key="service:billing")
    result = resolve(bank, "Service:Billing")
    assert (result.status, result.matched, result.entry) == ("resolved", "key", entry)


def test_a_title_shared_by_two_entries_is_ambiguous(bank, make_entry):
    a, b = make_entry("Duty Manager"), make_entry("Duty Manager", content="Night shift.")
    result = resolve(bank, "duty manager")
    assert result.status == "ambiguous" and result.entry is None
    assert {c["id"] for c in result.candidates} == {a.short_id, b.short_id}
    assert all(c["score"] == 1.0 for c in result.candidates)


def test_a_typo_resolves_fuzzy_with_a_score_under_one(bank, make_entry):
    entry = make_entry("Warehouse management system", kind="service")
    result = resolve(bank, "Warehouse managment system")
    assert (result.status, result.matched, result.entry) == ("resolved", "fuzzy", entry)
    assert 0 < result.candidates[0]["score"] < 1.0


def test_ambiguous_always_lists_two_or_more_candidates(bank, make_entry):
    make_entry("Maya Lindqvist", kind="person")
    make_entry("Quarterly stock take")
    result = resolve(bank, "maya")
    # One candidate under the bar: neither a guess nor an ambiguity; not_found, listing it.
    assert (result.status, result.matched, result.entry) == ("not_found", None, None)
    assert [c["title"] for c in result.candidates] == ["Maya Lindqvist"]
    assert result.candidates[0]["score"] < 1.0
