"""Edge extraction: the local extractor, validation before the queue, the review queue, runs."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from graph.curation.edge_proposals import accept_band, decide_edge_proposal
from graph.curation.revert import revert_operation
from graph.edges.links import link
from graph.ingest.extract.base import Statement, Vocabulary
from graph.ingest.extract.mentions import MentionIndex
from graph.ingest.extract.run import extract_edges
from graph.ingest.extract.validate import Validator
from graph.models import Edge, EdgeProposal, EdgeSource, EdgeType, ExtractionState
from graph.resolution.aliases import add_alias
from kb.errors import Conflict, InvalidInput
from kb.models import Operation, OperationKind
from kb.services.entries import update_entry

pytestmark = pytest.mark.django_db


@pytest.fixture
def ward(bank, make_entry):
    """A small hospital-logistics bank: named things, and a document stating relations."""
    e = {
        "porters": make_entry("Portering Service", kind="team", content="Moves patients."),
        "beds": make_entry("Bed Board", kind="service", content="Shows free beds."),
        "pas": make_entry("Patient Administration System", kind="service", content="PAS."),
        "policy": make_entry("Infection Control Policy", kind="policy", content="Rules."),
        "sheet": make_entry("Discharge Checklist", kind="artifact", content="A form."),
    }
    add_alias(bank, e["pas"], "PAS")
    e["doc"] = make_entry(
        "Patient Discharge",
        kind="step",
        content=(
            "Patient Discharge requires the Bed Board and the PAS. "
            "It is owned by the Portering Service. "
            "This step produces the Discharge Checklist. "
            "Patient Discharge is not governed by the Infection Control Policy. "
            "A late discharge may require the Portering Service."
        ),
    )
    return e


def proposals(bank):
    return list(EdgeProposal.objects.filter(bank=bank).select_related("type").order_by("pk"))


def triples(bank) -> set[tuple]:
    return {(p.from_entry_id, p.type.name, p.to_entry_id) for p in proposals(bank)}


def test_core_relations_carry_phrases_as_data():
    requires = EdgeType.objects.get(bank=None, name="requires")
    assert "requires" in requires.phrases and "is required by" in requires.inverse_phrases
    assert EdgeType.objects.get(bank=None, name="other").phrases == []


def test_local_extractor_queues_what_the_text_states_with_verbatim_spans(bank, ward):
    run = extract_edges(bank, entries=[ward["doc"].short_id], extractor="local")

    doc = ward["doc"]
    assert triples(bank) == {
        (doc.pk, "requires", ward["beds"].pk),
        (doc.pk, "requires", ward["pas"].pk),  # through the alias "PAS"
        (doc.pk, "owned_by", ward["porters"].pk),  # "It" is the entry itself
        (doc.pk, "produces", ward["sheet"].pk),
    }
    for p in proposals(bank):
        assert p.span in doc.content
        assert p.source_entry_id == doc.pk and p.extractor == "local" and p.status == "open"
    assert run.queued == 4 and run.by_kind == {"step": {"entries": 1, "queued": 4}}
    # The negated and the hedged sentence gave nothing, so no edge from them either.
    assert not Edge.objects.filter(bank=bank).exists()


def test_bank_relation_phrases_are_read_and_win_over_core_phrases(bank, make_entry):
    EdgeType.objects.create(bank=bank, name="depends_on", phrases=["depends on", "requires"])
    a = make_entry("Rate Engine", content="x")
    b = make_entry("Fuel Index API", content="y")
    doc = make_entry("Pricing notes", content="The Rate Engine requires the Fuel Index API.")
    extract_edges(bank, entries=[doc.short_id])
    assert triples(bank) == {(a.pk, "depends_on", b.pk)}


def test_ambiguous_and_unknown_ends_are_queued_unresolved_with_their_surface(bank, make_entry):
    make_entry("Duty Manager", kind="role", content="On shift.")
    make_entry("Duty Manager", kind="person", content="Named person.")
    doc = make_entry(
        "Night Stop",
        content="Night Stop is owned by the Duty Manager. Night Stop requires Hangar Nine.",
    )
    extract_edges(bank, entries=[doc.short_id])

    by_relation = {p.type.name: p for p in proposals(bank)}
    owned = by_relation["owned_by"]
    assert owned.from_entry_id == doc.pk and owned.to_entry_id is None
    assert owned.to_text == "Duty Manager" and len(owned.candidates["to"]) == 2
    unknown = by_relation["requires"]
    assert unknown.to_entry_id is None and unknown.to_text == "Hangar Nine"
    # Unresolved ends are never guessed: accepting needs the curator to name the entry.
    with pytest.raises(InvalidInput) as exc:
        decide_edge_proposal(bank, owned.pk, "accept")
    assert exc.value.code == "unresolved_end"
    assert not Edge.objects.filter(bank=bank).exists()
    chosen = owned.candidates["to"][0]["id"]
    result = decide_edge_proposal(bank, owned.pk, "accept", to_ref=chosen)
    assert result.edge.to_entry.short_id == chosen


class ScriptedExtractor:
    """Says exactly the statements it is given (to test validation, not reading)."""

    name = "scripted"

    def __init__(self, statements):
        self.statements = statements

    def extract(self, entry, vocabulary):
        return list(self.statements)


def test_invalid_statements_never_reach_the_queue(bank, ward):
    doc = ward["doc"]
    span = "Patient Discharge requires the Bed Board and the PAS."
    link(bank, {"from": doc.short_id, "to": ward["pas"].short_id, "relation": "requires"})
    bad = [
        Statement(
            "Patient Discharge requires the Bed Board.",
            "requires",
            "Patient Discharge",
            "Bed Board",
        ),
        Statement(span, "needs_badly", "Patient Discharge", "Bed Board"),  # not in vocabulary
        Statement(span, "other", "Patient Discharge", "Bed Board"),  # other needs a label
        Statement(span, "requires", "Patient Discharge", "Bed Board Service"),  # not in span
        Statement(span, "requires", "Patient Discharge", "PAS"),  # already a current edge
        Statement(span, "requires", "Bed Board", "Bed Board"),  # self-loop
        Statement(span, "requires", "", "Bed Board"),  # no end
    ]
    good = Statement(span, "requires", "Patient Discharge", "Bed Board")
    run = extract_edges(
        bank, entries=[doc.short_id], extractor_instance=ScriptedExtractor([*bad, good, good])
    )
    assert run.statements == 9 and run.queued == 1
    assert triples(bank) == {(doc.pk, "requires", ward["beds"].pk)}
    assert dict(run.dropped) == {
        "span_not_verbatim": 1,
        "relation_not_in_vocabulary": 2,
        "end_not_in_span": 1,
        "current_edge": 1,
        "self_loop": 1,
        "end_missing": 1,
        "already_proposed": 1,
    }


def test_validator_resolves_the_source_entry_even_when_the_span_says_it(bank, ward):
    doc = ward["doc"]
    validator = Validator(bank, Vocabulary.for_bank(bank), MentionIndex(bank))
    st = Statement(
        "It is owned by the Portering Service.",
        "owned_by",
        "Patient Discharge",
        "Portering Service",
    )
    checked = validator.check(doc, st)
    assert checked.from_pk == doc.pk and checked.to_pk == ward["porters"].pk
    # Any other entry named outside the span is refused.
    other = Statement(
        "It is owned by the Portering Service.", "owned_by", "Bed Board", "Portering Service"
    )
    assert validator.check(doc, other) is None
    assert validator.dropped["end_not_in_span"] == 1


def test_accept_writes_the_edge_through_the_link_service_and_revert_undoes_it(bank, ward):
    extract_edges(bank, entries=[ward["doc"].short_id])
    proposal = next(p for p in proposals(bank) if p.type.name == "produces")

    result = decide_edge_proposal(bank, proposal.pk, "accept", reason="checked the span")

    edge = Edge.objects.get(pk=result.edge.pk)
    assert (edge.from_entry_id, edge.to_entry_id, edge.type.name) == (
        ward["doc"].pk, ward["sheet"].pk, "produces",
    )  # fmt: skip
    assert edge.source == EdgeSource.EXTRACTED
    assert edge.evidence["quote"] == proposal.span == "This step produces the Discharge Checklist."
    assert edge.evidence["source"] == ward["doc"].short_id
    op = Operation.objects.get(pk=result.operation.pk)
    assert op.kind == OperationKind.LINK and op.details["edges"] == [edge.pk]
    proposal.refresh_from_db()
    assert proposal.status == "accepted" and proposal.edge_id == edge.pk

    with pytest.raises(Conflict):  # decided once
        decide_edge_proposal(bank, proposal.pk, "reject")

    revert_operation(bank, op.pk, "wrong reading")
    assert not Edge.objects.filter(pk=edge.pk).exists()


def test_reject_is_kept_and_not_raised_again(bank, ward):
    doc = ward["doc"]
    extract_edges(bank)  # incremental: everything is new
    target = next(p for p in proposals(bank) if p.type.name == "owned_by")
    decide_edge_proposal(bank, target.pk, "reject", reason="the porters do not own discharge")
    before = EdgeProposal.objects.filter(bank=bank).count()

    # The entry changes (so the incremental run reads it again) but still says the same.
    update_entry(bank, doc, {"content": doc.content + " Beds are cleaned first."})
    run = extract_edges(bank)
    assert run.entries == 1 and run.queued == 0
    assert run.dropped["already_proposed"] == 4  # including the rejected one
    assert EdgeProposal.objects.filter(bank=bank).count() == before
    target.refresh_from_db()
    assert target.status == "rejected" and target.decision_reason.startswith("the porters")

    # Even worded differently, the same triple from the same entry stays rejected.
    update_entry(bank, doc, {"content": "Patient Discharge is owned by Portering Service."})
    run = extract_edges(bank)
    assert run.queued == 0 and run.dropped["rejected_before"] == 1


def test_incremental_runs_read_only_changed_entries(bank, ward):
    first = extract_edges(bank)
    assert first.entries == len(ward)
    assert extract_edges(bank).entries == 0
    update_entry(
        bank, ward["beds"], {"content": "The Bed Board is owned by the Portering Service."}
    )
    again = extract_edges(bank)
    assert again.entries == 1 and again.queued == 1
    state = ExtractionState.objects.get(bank=bank, extractor="local")
    assert state.watermark is not None and state.pending == []


def test_bulk_accept_by_band_is_one_revertible_operation(bank, ward):
    extract_edges(bank, entries=[ward["doc"].short_id])
    by_confidence = sorted(proposals(bank), key=lambda p: p.confidence)
    assert len({p.confidence for p in by_confidence}) == 4  # four readings, four values
    # The band from the second most confident: exactly the top two are accepted.
    top = by_confidence[-2:]

    result = accept_band(bank, min_confidence=top[0].confidence)

    assert sorted(result.accepted) == sorted(p.pk for p in top) and result.skipped == []
    edges = Edge.objects.filter(bank=bank, source=EdgeSource.EXTRACTED)
    assert edges.count() == 2
    assert EdgeProposal.objects.filter(bank=bank, status="open").count() == 2
    revert_operation(bank, result.operation.pk, "batch was wrong")
    assert not Edge.objects.filter(bank=bank).exists()


def test_bulk_accept_skips_a_proposal_whose_edge_now_exists(bank, ward):
    extract_edges(bank, entries=[ward["doc"].short_id])
    link(bank, {"from": ward["doc"].short_id, "to": ward["beds"].short_id, "relation": "requires"})
    result = accept_band(bank, min_confidence=0.0)
    assert len(result.accepted) == 3
    assert [s["code"] for s in result.skipped] == ["duplicate_edge"]
    assert Edge.objects.filter(bank=bank, source=EdgeSource.EXTRACTED).count() == 3


def test_extract_edges_command_reports_progress_and_a_summary(bank, ward):
    out, err = StringIO(), StringIO()
    call_command(
        "extract_edges", bank.slug, "--entries", ward["doc"].short_id, stdout=out, stderr=err
    )
    assert "queued 4 proposals" in out.getvalue()
    assert "1/1" in err.getvalue()  # the progress bar
    assert EdgeProposal.objects.filter(bank=bank).count() == 4


def test_extract_edges_command_runs_the_action_and_refuses_as_rest_does(bank, ward, settings):
    """The command's input is the action's declaration: an unconfigured llm extractor is the
    same refusal REST gives, before any bar or proposal."""
    settings.KB_EXTRACT_LLM_URL = ""
    with pytest.raises(CommandError, match="not configured"):
        call_command("extract_edges", bank.slug, "--extractor", "llm", stdout=StringIO())
    assert not EdgeProposal.objects.filter(bank=bank).exists()
    call_command("extract_edges", bank.slug, "--entries", ward["doc"].short_id, stdout=StringIO())
    assert EdgeProposal.objects.filter(bank=bank).count() == 4


def test_a_proposal_whose_span_was_edited_away_cannot_be_accepted(bank, ward):
    extract_edges(bank, entries=[ward["doc"].short_id])
    proposal = next(p for p in proposals(bank) if p.type.name == "produces")
    update_entry(bank, ward["doc"], {"content": "Rewritten: nothing about checklists."})
    with pytest.raises(Conflict) as exc:
        decide_edge_proposal(bank, proposal.pk, "accept")
    assert exc.value.code == "span_gone"
    assert not Edge.objects.filter(bank=bank).exists()
    proposal.refresh_from_db()
    assert proposal.status == "open"


def test_relation_phrases_travel_through_import_and_export(bank):
    import json

    from kb.errors import KbError
    from kb.services.bulk import export_lines, import_bank

    line = {"type": "relation", "name": "depends_on", "phrases": ["depends on", " relies on "]}
    import_bank(bank, json.dumps(line))
    etype = EdgeType.objects.get(bank=bank, name="depends_on")
    assert etype.phrases == ["depends on", "relies on"] and etype.inverse_phrases == []
    exported = [json.loads(x) for x in export_lines(bank)]
    relation = next(x for x in exported if x["type"] == "relation")
    assert relation["phrases"] == ["depends on", "relies on"]
    # A line without phrases leaves the phrases a curator set alone.
    import_bank(bank, json.dumps({"type": "relation", "name": "depends_on", "inverse": "x"}))
    etype.refresh_from_db()
    assert etype.phrases == ["depends on", "relies on"] and etype.inverse == "x"
    with pytest.raises(KbError):
        import_bank(bank, json.dumps({**line, "phrases": "depends on"}))


@pytest.mark.parametrize(
    "sentence",
    [
        "Patient Discharge no longer requires the Bed Board.",
        "Patient Discharge used to require the Bed Board.",
        "Before 2022, Patient Discharge required the Bed Board.",
        "If the lifts fail, Patient Discharge requires the Bed Board.",
        "Patient Discharge would require the Bed Board at night.",
        "Patient Discharge will require the Bed Board from spring.",
        "Patient Discharge is planned to require the Bed Board.",
        "Does Patient Discharge require the Bed Board?",
        "Patient Discharge requires the Bed Board never.",
        "Patient Discharge is owned by no one, not the Portering Service.",
    ],
)
def test_negated_hypothetical_and_historical_sentences_propose_nothing(bank, ward, sentence):
    doc = ward["doc"]
    update_entry(bank, doc, {"content": sentence})
    extract_edges(bank, entries=[doc.short_id], extractor="local")
    assert proposals(bank) == []


def test_cue_words_inside_a_name_of_the_bank_are_not_cues(bank, ward, make_entry):
    plan = make_entry("Surge Plan If Needed", kind="artifact", content="A plan.")
    doc = ward["doc"]
    update_entry(bank, doc, {"content": "Patient Discharge requires the Surge Plan If Needed."})
    extract_edges(bank, entries=[doc.short_id], extractor="local")
    assert triples(bank) == {(doc.pk, "requires", plan.pk)}


def test_an_agent_is_never_put_into_a_sequence(bank, ward, make_entry):
    """ "is followed closely by" a team is attending it, not a step after a step: validation
    drops a ``precedes`` with a role, team or person at an end, whatever the extractor."""
    cleaning = make_entry("Bed Cleaning", kind="step", content="Strip and clean.")
    doc = make_entry(
        "Ward Round",
        kind="step",
        content=(
            "Ward Round is followed closely by the Portering Service. "
            "Ward Round is followed by Bed Cleaning."
        ),
    )
    run = extract_edges(bank, entries=[doc.short_id], extractor="local")
    assert triples(bank) == {(doc.pk, "precedes", cleaning.pk)}
    assert run.dropped["agent_in_sequence"] == 1
    # The same statement from any extractor is refused by validation.
    validator = Validator(bank, Vocabulary.for_bank(bank), MentionIndex(bank))
    span = "Ward Round is followed closely by the Portering Service."
    st = Statement(span, "precedes", "Ward Round", "Portering Service")
    assert validator.check(doc, st) is None
    assert validator.dropped["agent_in_sequence"] == 1
