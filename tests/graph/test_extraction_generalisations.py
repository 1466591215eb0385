"""The local extractor's second round of rules (issue 21, branch extract2): one test per rule,
on sentences written for these tests (a water works; no sentence of any bench set)."""

from __future__ import annotations

import pytest

from graph.ingest.extract.base import Vocabulary
from graph.ingest.extract.local import LocalExtractor, PhraseMatcher
from graph.ingest.extract.mentions import MentionIndex
from graph.ingest.extract.phrases import eventive, passive_form, perfect_forms
from graph.models import EdgeType

pytestmark = pytest.mark.django_db

NAMES = [
    "Lab Team", "Control Room", "Site Manager", "Flow Meter", "Telemetry Hub", "Dosing Log",
    "Pump Schedule", "Paper Rota", "Filter Hall",
]  # fmt: skip


@pytest.fixture
def works(bank, make_entry):
    return {n: make_entry(n, kind="team", content="x") for n in NAMES}


@pytest.fixture
def read(bank, works):
    """Triples (from title, relation, to title) read in one sentence of ``about``'s text
    (default: a document that names none of the works); the entry itself reads "@self"."""
    titles = {e.pk: e.title for e in works.values()}

    def run(sentence: str, about: str | None = None) -> set[tuple[str, str, str]]:
        index = MentionIndex(bank)
        extractor = LocalExtractor(index)
        vocabulary = Vocabulary.for_bank(bank)
        extractor._matcher, extractor._vocabulary = PhraseMatcher(vocabulary), vocabulary
        if about is not None:
            extractor.about(works[about])

        def name(text, is_self):
            return "@self" if is_self else titles.get(index.resolve(text).entry_pk, f"?{text}")

        return {
            (name(s.from_text, s.from_self), s.relation, name(s.to_text, s.to_self))
            for s in extractor.read_sentence(sentence)
        }

    return run


def test_reported_speech_and_hearsay_state_nothing(read):
    assert read("The auditor claimed the Lab Team owns the Dosing Log.") == set()
    assert read("According to the Site Manager, the Lab Team owns the Dosing Log.") == set()
    assert read("Rumour has it that the Lab Team owns the Dosing Log.") == set()
    assert read("The Lab Team is said to own the Dosing Log.") == set()
    assert read("The Lab Team owns the Dosing Log.") == {("Dosing Log", "owned_by", "Lab Team")}


def test_cues_are_read_per_independent_clause(read):
    assert read(
        "The Site Manager may visit the Filter Hall, but the Dosing Log is maintained by the Lab Team."
    ) == {("Dosing Log", "owned_by", "Lab Team")}
    assert read(
        "The Control Room needs the Paper Rota; if the Telemetry Hub fails, the Lab Team needs "
        "the Flow Meter."
    ) == {("Control Room", "requires", "Paper Rota")}
    # A question is no statement, in any of its clauses.
    assert read("The Control Room needs the Paper Rota; does the Lab Team own it?") == set()


def test_follow_to_the_letter_is_obeying_not_coming_after(read):
    assert read("The Pump Schedule follows the Paper Rota to the letter.") == set()
    assert read("The Pump Schedule follows the Paper Rota strictly.") == set()
    assert read("The Pump Schedule follows the Paper Rota.") == {
        ("Paper Rota", "precedes", "Pump Schedule")
    }


def test_may_the_month_is_no_hedge_and_where_fronts_a_condition(read):
    assert read("The Filter Hall, which is part of the Control Room, was repainted in May.") == {
        ("Filter Hall", "part_of", "Control Room")
    }
    assert read("The Lab Team may own the Dosing Log.") == set()
    assert read("Where the Flow Meter fails, the Control Room needs the Paper Rota.") == set()
    # "where" after a name opens a relative clause, no condition.
    assert read(
        "The Filter Hall, where the Lab Team works, is maintained by the Site Manager."
    ) == {("Filter Hall", "owned_by", "Site Manager")}


def test_present_perfect_of_a_passive_and_the_past_of_an_eventive_relation(bank, read):
    assert read("The Paper Rota has been superseded by the Pump Schedule.") == {
        ("Pump Schedule", "supersedes", "Paper Rota")
    }
    # The core vocabulary states supersedes in the present: its past is history, not read.
    assert read("The Paper Rota was superseded by the Pump Schedule.") == set()
    assert eventive(["replaced", "is replaced by"]) and not eventive(["replaces", "needs"])
    assert "was superseded by" in perfect_forms("is superseded by", True)
    assert "was superseded by" not in perfect_forms("is superseded by", False)
    assert perfect_forms("is part of", True) == []


def test_the_passive_of_an_active_phrase_reads_the_other_way_round(bank, read):
    assert passive_form("looks after") == "is looked after by"
    assert passive_form("watches") == "is watched by"
    assert passive_form("keeps an eye on") is None
    EdgeType.objects.create(
        bank=bank,
        name="monitored_by",
        inverse="monitors",
        phrases=["is monitored by"],
        inverse_phrases=["looks after", "watches"],
    )
    assert read("The Flow Meter is looked after by the Control Room.") == {
        ("Flow Meter", "monitored_by", "Control Room")
    }
    assert read("The Telemetry Hub is watched by the Site Manager.") == {
        ("Telemetry Hub", "monitored_by", "Site Manager")
    }


def test_an_adverb_or_an_ordinal_inside_a_phrase(read):
    assert read("The Flow Meter and the Dosing Log are both maintained by the Lab Team.") == {
        ("Flow Meter", "owned_by", "Lab Team"),
        ("Dosing Log", "owned_by", "Lab Team"),
    }
    assert read("The Dosing Log is the final stage of the Pump Schedule.") == {
        ("Dosing Log", "part_of", "Pump Schedule")
    }


def test_a_verb_shared_by_two_prepositions(read):
    assert read("The Pump Schedule comes after the Paper Rota and before the Dosing Log.") == {
        ("Paper Rota", "precedes", "Pump Schedule"),
        ("Pump Schedule", "precedes", "Dosing Log"),
    }


def test_an_object_closed_by_an_adverb_a_subordinator_or_a_small_clause(read):
    assert read("The Control Room maintains the Flow Meter remotely.") == {
        ("Flow Meter", "owned_by", "Control Room")
    }
    assert read("The Flow Meter is maintained by the Lab Team even though others use it.") == {
        ("Flow Meter", "owned_by", "Lab Team")
    }
    assert read("The Pump Schedule needs the Flow Meter being calibrated.") == {
        ("Pump Schedule", "requires", "Flow Meter")
    }
    assert read("The Pump Schedule needs the Telemetry Hub sending the readings.") == {
        ("Pump Schedule", "requires", "Telemetry Hub")
    }
    assert read("The Paper Rota comes before the Pump Schedule starts.") == {
        ("Paper Rota", "precedes", "Pump Schedule")
    }
    assert read("The Lab Team maintains the Dosing Log day to day.") == {
        ("Dosing Log", "owned_by", "Lab Team")
    }
    # "-ly" nouns and frequency adjectives still continue the noun phrase.
    assert read("The Pump Schedule needs the Flow Meter supply line.") == set()
    assert read("The Lab Team maintains the Dosing Log monthly summary.") == set()


def test_a_group_s_members_act_for_it(read):
    assert read("The Dosing Log is maintained by the Lab Team night shift.") == {
        ("Dosing Log", "owned_by", "Lab Team")
    }
    assert read("Control Room operators and the Site Manager both manage the Flow Meter.") == {
        ("Flow Meter", "owned_by", "Control Room"),
        ("Flow Meter", "owned_by", "Site Manager"),
    }


def test_discourse_parentheticals_runs_of_them_and_dashes_are_skipped(read):
    assert read(
        "The Lab Team owns the Dosing Log; the Paper Rota, by contrast, is maintained by the "
        "Site Manager."
    ) == {("Dosing Log", "owned_by", "Lab Team"), ("Paper Rota", "owned_by", "Site Manager")}
    assert read(
        "The Filter Hall, built in 1970, extended twice, is maintained by the Lab Team."
    ) == {("Filter Hall", "owned_by", "Lab Team")}
    # A negation inside the aside is no negation of the verb.
    assert read(
        "The Paper Rota - the binder nobody reads - is maintained by the Site Manager."
    ) == {("Paper Rota", "owned_by", "Site Manager")}


def test_respectively_pairs_subjects_and_objects_in_order(read):
    assert read(
        "The Lab Team and the Site Manager maintain the Dosing Log and the Paper Rota respectively."
    ) == {("Dosing Log", "owned_by", "Lab Team"), ("Paper Rota", "owned_by", "Site Manager")}
    assert (
        len(read("The Lab Team and the Site Manager maintain the Dosing Log and the Paper Rota."))
        == 4
    )


def test_an_object_it_is_the_entry_only_when_no_other_name_could_be_meant(read):
    assert read(
        "The Filter Hall stands by the river, and the Lab Team maintains it.", "Filter Hall"
    ) == {("@self", "owned_by", "Lab Team")}
    assert (
        read("The Lab Team hands the Dosing Log to the Site Manager, who maintains it.", "Lab Team")
        == set()
    )


def test_a_stranded_preposition_and_a_participle_in_a_list(read):
    assert read("The Dosing Log, which the Pump Schedule needs for its timings, is kept dry.") == {
        ("Pump Schedule", "requires", "Dosing Log")
    }
    assert read("The Pump Schedule needs the Flow Meter and a calibrated Telemetry Hub.") == {
        ("Pump Schedule", "requires", "Flow Meter"),
        ("Pump Schedule", "requires", "Telemetry Hub"),
    }


def test_a_prepositional_modifier_leaves_the_subject_its_head(read):
    assert read("The Pump Schedule for the Filter Hall needs the Flow Meter.") == {
        ("Pump Schedule", "requires", "Flow Meter")
    }
    # "by" introduces an agent, not a modifier: no subject is read through it.
    assert read("The report by the Lab Team needs the Flow Meter.") == set()


def test_sequences_without_a_phrase(read):
    assert read("First the Paper Rota, then the Pump Schedule, then the Dosing Log.") == {
        ("Paper Rota", "precedes", "Pump Schedule"),
        ("Pump Schedule", "precedes", "Dosing Log"),
    }
    # A list without "then" is no sequence.
    assert read("The Lab Team needs the Flow Meter, the Paper Rota and the Dosing Log.") == {
        ("Lab Team", "requires", n) for n in ("Flow Meter", "Paper Rota", "Dosing Log")
    }
    assert read("After the Paper Rota, the Lab Team checks the Pump Schedule.") == {
        ("Paper Rota", "precedes", "Pump Schedule")
    }
    assert read("Once the Paper Rota is done, the Lab Team checks the Pump Schedule.") == {
        ("Paper Rota", "precedes", "Pump Schedule")
    }
    assert read("After the Paper Rota, nobody checks the Pump Schedule.") == set()
    # The main clause's name after "by" is an agent, not the next step.
    assert read(
        "Once the Paper Rota is signed, the Pump Schedule is maintained by the Lab Team."
    ) == {("Pump Schedule", "owned_by", "Lab Team")}


def test_an_adverbial_between_a_passive_participle_and_by(read):
    assert read("The Flow Meter is maintained day to day by the Lab Team.") == {
        ("Flow Meter", "owned_by", "Lab Team")
    }
    assert read("The Telemetry Hub is managed around the clock by the Control Room.") == {
        ("Telemetry Hub", "owned_by", "Control Room")
    }


def test_the_object_of_after_or_before_may_open_a_clause(read):
    assert read("The Pump Schedule comes after the Dosing Log is signed.") == {
        ("Dosing Log", "precedes", "Pump Schedule")
    }
    # Any other verb after an object still ends the list there.
    assert read("The Pump Schedule needs the Dosing Log is signed.") == set()


def test_an_elliptical_clause_repeats_the_verb_phrase_without_its_negation(read):
    assert read(
        "Neither the Lab Team nor the Control Room owns the Dosing Log; the Site Manager does."
    ) == {("Dosing Log", "owned_by", "Site Manager")}
    assert (
        read("The Lab Team doesn't own the Dosing Log; the Site Manager doesn't either.") == set()
    )
