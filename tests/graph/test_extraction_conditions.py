"""Conditions and habitual time scopes (issue 21, branch extract): a relation that holds only in
the case a condition names is no present fact; a habitual time scope keeps it. Sentences
written for these tests (a water works; no sentence of any bench set)."""

from __future__ import annotations

import pytest

from graph.ingest.extract.cues import not_a_present_fact
from graph.models import EdgeType
from tests.graph import test_extraction_generalisations as works_fixtures

works, read = works_fixtures.works, works_fixtures.read  # the water works' fixtures

pytestmark = pytest.mark.django_db

OWNS = {("Pump Schedule", "owned_by", "Control Room")}


def test_a_when_clause_after_the_relation_in_the_present_is_a_condition(read):
    assert read("The Lab Team escalates to the Site Manager when a reading is out of range.") == (
        set()
    )
    assert read("The Control Room owns the Pump Schedule when the river runs high.") == set()
    assert read("The Control Room owns the Pump Schedule when needed.") == set()
    assert read("The Control Room owns the Pump Schedule.") == OWNS


def test_a_past_when_clause_dates_an_event_and_a_wh_object_is_no_condition():
    # The past dates a replacement ("… when the hall was rebuilt"); "decides when" is an object.
    assert not not_a_present_fact(
        "Flow Meter replaced the Paper Rota when the hall was rebuilt.", []
    )
    assert not not_a_present_fact("Flow Meter replaced the Paper Rota when Ops went live.", [])
    assert not not_a_present_fact("The crew owns the pumps and decides when a pump stops.", [])
    assert not_a_present_fact("The crew owns the pumps when a pump stops.", [])
    # A "when" inside an aside conditions the aside only.
    assert not not_a_present_fact("The rota, which is used when a pump stops, needs a hub.", [])
    assert not not_a_present_fact("The rota, used when a pump stops, needs a hub.", [])


def test_a_relation_inside_the_condition_is_no_fact(read):
    assert read("The site is called when the Lab Team needs the Control Room.") == set()
    assert read("The site is called whenever the Lab Team needs the Control Room.") == set()
    assert read("The site is called, and the Lab Team needs the Control Room.") == {
        ("Lab Team", "requires", "Control Room")
    }


def test_conditions_wherever_they_stand(read):
    for sentence in (
        "The Control Room owns the Pump Schedule in case the Lab Team is short-staffed.",
        "The Control Room owns the Pump Schedule provided that the Flow Meter works.",
        "The Control Room owns the Pump Schedule, provided the Flow Meter works.",
        "In the event of a flood, the Control Room owns the Pump Schedule.",
        "The Control Room owns the Pump Schedule as long as the Site Manager is away.",
        "The Control Room owns the Pump Schedule, should the Lab Team be short-staffed.",
        "The Control Room owns the Pump Schedule, were the Filter Hall to flood.",
        "Provided the Flow Meter works, the Control Room owns the Pump Schedule.",
    ):
        assert read(sentence) == set(), sentence
    # "provided by" is a passive, no condition
    assert not not_a_present_fact("The Dosing Log is provided by the Lab Team.", [])


def test_otherwise_makes_only_its_own_clause_conditional(read):
    assert read("The Control Room owns the Pump Schedule; otherwise the Lab Team does.") == OWNS
    assert read("The Control Room owns the Pump Schedule, otherwise the Lab Team owns it.") == OWNS
    assert read("Otherwise the Control Room owns the Pump Schedule.") == set()
    # "otherwise known as" names, it sets no condition
    assert not not_a_present_fact("The hall, otherwise known as the shed, holds pumps.", [])


def test_habitual_time_scopes_keep_their_relation(read):
    assert read("The Control Room owns the Pump Schedule every morning.") == OWNS
    assert read("After 22:00 the Control Room owns the Pump Schedule.") == OWNS
    assert read("The Control Room owns the Pump Schedule at night.") == OWNS
    assert read("During the week the Control Room owns the Pump Schedule.") == OWNS


def test_what_cannot_happen_without_another_requires_it(read):
    """A necessary condition stated as a fact is a requirement, whatever verb stands between."""
    needs = {("Lab Team", "requires", "Paper Rota")}
    assert read("The Lab Team can't start a shift without the Paper Rota.") == needs
    assert read("The Lab Team cannot be signed in without the Paper Rota.") == needs
    assert read("The Lab Team can not work until the Paper Rota is printed.") == needs
    # Nothing without the negation, and nothing when the whole is a condition.
    assert read("The Lab Team can work without the Paper Rota.") == set()
    assert read("If the Flow Meter fails, the Lab Team can't start without the Paper Rota.") == (
        set()
    )
    # No name may stand between ("cannot tell the Site Manager without …" is no requirement).
    assert read("The Lab Team cannot tell the Site Manager without the Paper Rota.") == set()


def test_a_direct_object_may_split_a_verb_from_its_preposition(bank, read):
    EdgeType.objects.create(
        bank=bank, name="escalates_to", inverse="receives", phrases=["escalates to"]
    )
    up = {("Lab Team", "escalates_to", "Site Manager")}
    assert read("The Lab Team escalates dosing faults to the Site Manager.") == up
    assert read("The Lab Team escalates to the Site Manager.") == up
    assert read("The Pump Schedule comes shortly after the Paper Rota.") == {
        ("Paper Rota", "precedes", "Pump Schedule")
    }
    # A particle or a preposition makes another verb; a negation inside is no object.
    assert read("The Lab Team escalates faults up to the Site Manager.") == set()
    assert read("The Lab Team escalates no faults to the Site Manager.") == set()
    # Before another preposition than "to" only an adverbial may stand: "builds the rota on"
    # is no "builds on" (derived_from).
    assert read("The Pump Schedule builds heavily on the Paper Rota.") == {
        ("Pump Schedule", "derived_from", "Paper Rota")
    }
    assert read("The Pump Schedule builds the rota on the Paper Rota.") == set()


def test_common_wordings_of_ownership_and_requirement_outside_the_phrases(read):
    owned = {("Dosing Log", "owned_by", "Lab Team")}
    assert read("The Dosing Log is held by the Lab Team.") == owned
    assert read("The Dosing Log is kept by the Lab Team.") == owned
    assert read("The Lab Team is the custodian of the Dosing Log.") == owned
    assert read("The Flow Meter leans on the Telemetry Hub.") == {
        ("Flow Meter", "requires", "Telemetry Hub")
    }
    # Negated, they state nothing, as any phrase.
    assert read("The Dosing Log is not held by the Lab Team.") == set()


def test_a_list_after_a_colon_passes_over_items_that_are_no_names(read):
    assert read("The Lab Team owns: the Dosing Log, the pump keys, 2) the Flow Meter.") == {
        ("Dosing Log", "owned_by", "Lab Team"),
        ("Flow Meter", "owned_by", "Lab Team"),
    }
    assert read("The Control Room needs two things: the Paper Rota and a dry floor.") == {
        ("Control Room", "requires", "Paper Rota")
    }
    assert read("The Lab Team owns: the Dosing Log and the Flow Meter.") == {
        ("Dosing Log", "owned_by", "Lab Team"),
        ("Flow Meter", "owned_by", "Lab Team"),
    }
    # A name that modifies the next noun is no item ("the Flow Meter cabinet").
    assert read("The Lab Team owns: the Flow Meter cabinet, the Dosing Log.") == {
        ("Dosing Log", "owned_by", "Lab Team")
    }


def test_a_list_introduced_as_a_sequence_is_ordered(read):
    assert read("Night sequence: Paper Rota, Pump Schedule, Dosing Log.") == {
        ("Paper Rota", "precedes", "Pump Schedule"),
        ("Pump Schedule", "precedes", "Dosing Log"),
    }
    # A list with no sequence label (or "then") is no order.
    assert read("Night papers: Paper Rota, Pump Schedule, Dosing Log.") == set()


def test_a_participle_label_with_its_agent_and_a_colon_gives_the_items_subjects(read):
    assert read("Maintained by the Lab Team: the Flow Meter, spare keys, the Telemetry Hub.") == {
        ("Flow Meter", "owned_by", "Lab Team"),
        ("Telemetry Hub", "owned_by", "Lab Team"),
    }
    # No colon, no label: the participle's subject is not read, the main clause is.
    assert read("Maintained by the Lab Team, the Flow Meter needs the Telemetry Hub.") == {
        ("Flow Meter", "requires", "Telemetry Hub")
    }
