"""The local extractor reads clause structure: one test per rule, on sentences written for
these tests (a water works; no sentence of any bench set)."""

from __future__ import annotations

import pytest

from graph.ingest.extract.base import Vocabulary
from graph.ingest.extract.local import LocalExtractor, PhraseMatcher, plural_form, reduced_form
from graph.ingest.extract.mentions import MentionIndex
from graph.ingest.extract.run import extract_edges
from graph.models import EdgeProposal
from graph.resolution.aliases import add_alias

pytestmark = pytest.mark.django_db

NAMES = [
    "Lab Team", "Control Room", "Site Manager", "Flow Meter", "Telemetry Hub", "Dosing Log",
    "Pump Schedule", "Paper Rota", "Field Samplers", "Filter Hall",
]  # fmt: skip


@pytest.fixture
def works(bank, make_entry):
    entries = {n: make_entry(n, kind="team", content="x") for n in NAMES}
    add_alias(bank, entries["Flow Meter"], "the flow")  # an alias that starts with "the"
    return entries


@pytest.fixture
def read(bank, works):
    """Triples (from title, relation, to title) the local extractor reads in one sentence;
    an end naming the entry itself reads "@self", an unresolved end "?<form>"."""
    index = MentionIndex(bank)
    extractor = LocalExtractor(index)
    vocabulary = Vocabulary.for_bank(bank)
    extractor._matcher, extractor._vocabulary = PhraseMatcher(vocabulary), vocabulary
    titles = {e.pk: e.title for e in works.values()}

    def name(text, is_self):
        if is_self:
            return "@self"
        found = index.resolve(text)
        return titles.get(found.entry_pk, f"?{text}")

    def run(sentence: str) -> set[tuple[str, str, str]]:
        return {
            (name(s.from_text, s.from_self), s.relation, name(s.to_text, s.to_self))
            for s in extractor.read_sentence(sentence)
        }

    return run


def test_a_relative_clause_subject_is_not_the_main_verb_subject(read):
    assert read("The Dosing Log that the Lab Team owns needs the Flow Meter.") == {
        ("Dosing Log", "owned_by", "Lab Team"),  # the relative verb takes the log as object
        ("Dosing Log", "requires", "Flow Meter"),
    }
    # The modified noun is no name of the bank: nothing for the main verb, and never the
    # relative clause's subject in its place.
    assert read("Every sample that the Lab Team tests needs the Flow Meter.") == set()


def test_a_relative_clause_without_that(read):
    assert read("The Pump Schedule the Control Room owns replaces the Paper Rota.") == {
        ("Pump Schedule", "owned_by", "Control Room"),
        ("Pump Schedule", "supersedes", "Paper Rota"),
    }


def test_a_parenthetical_is_skipped_and_a_relative_pronoun_stands_for_its_name(read):
    assert read("The Lab Team, which the Site Manager manages, needs the Flow Meter.") == {
        ("Lab Team", "owned_by", "Site Manager"),
        ("Lab Team", "requires", "Flow Meter"),
    }
    assert read("The Control Room, which manages the Pump Schedule, needs the Telemetry Hub.") == {
        ("Pump Schedule", "owned_by", "Control Room"),
        ("Control Room", "requires", "Telemetry Hub"),
    }
    assert read("The Control Room, unlike the Lab Team, needs the Telemetry Hub.") == {
        ("Control Room", "requires", "Telemetry Hub")
    }
    # A negation inside the parenthetical does not negate the main clause.
    assert read("The Site Manager, not the Lab Team, manages the Filter Hall.") == {
        ("Filter Hall", "owned_by", "Site Manager")
    }


def test_a_verb_joined_by_and_keeps_its_subject(read):
    assert read("The Flow Meter needs the Telemetry Hub and is maintained by the Lab Team.") == {
        ("Flow Meter", "requires", "Telemetry Hub"),
        ("Flow Meter", "owned_by", "Lab Team"),
    }


def test_a_coordinated_subject_gives_one_statement_per_name(read):
    assert read("The Lab Team and the Control Room need the Telemetry Hub.") == {
        ("Lab Team", "requires", "Telemetry Hub"),
        ("Control Room", "requires", "Telemetry Hub"),
    }


def test_a_list_ends_where_a_name_is_followed_by_a_verb(read):
    assert read(
        "The Control Room needs the Pump Schedule, and the Lab Team owns the Dosing Log."
    ) == {
        ("Control Room", "requires", "Pump Schedule"),
        ("Dosing Log", "owned_by", "Lab Team"),
    }
    assert read("The Control Room needs the Flow Meter, the Telemetry Hub and the Paper Rota.") == {
        ("Control Room", "requires", "Flow Meter"),
        ("Control Room", "requires", "Telemetry Hub"),
        ("Control Room", "requires", "Paper Rota"),
    }
    # A name followed by a noun modifies it ("the Telemetry Hub password"): no list item.
    assert read("The Lab Team needs the Flow Meter and the Telemetry Hub password.") == {
        ("Lab Team", "requires", "Flow Meter")
    }


def test_possessors_and_names_after_a_preposition_are_no_ends(read):
    assert read("The Lab Team's freezer is part of the Filter Hall.") == set()
    assert read("The Control Room needs the Site Manager's signature.") == set()
    assert read("The door to the Control Room is maintained by the Site Manager.") == set()


def test_a_name_inside_another_noun_phrase_or_an_infinitive_is_no_object(read):
    assert read("The Lab Team needs patience from the Site Manager.") == set()
    assert read("The Lab Team is part of the reason the Pump Schedule slips.") == set()
    assert read("The Control Room manages to keep the Flow Meter online.") == set()


def test_plural_verb_forms_need_a_plural_subject(read):
    assert plural_form("relies on") == "rely on" and plural_form("is owned by") == "are owned by"
    assert plural_form("then") is None
    assert read("The Field Samplers need the Flow Meter.") == {
        ("Field Samplers", "requires", "Flow Meter")
    }
    # A singular name with a plural verb, an infinitive, a negation: no statement.
    assert read("The Lab Team need the Flow Meter.") == set()
    assert read("The Field Samplers have to own the Dosing Log.") == set()
    assert read("The Field Samplers don't need the Paper Rota.") == set()


def test_reduced_participles_after_a_name_and_a_comma_or_colon(read):
    assert reduced_form("is maintained by") == "maintained by"
    assert reduced_form("is part of") is None
    assert read("The Dosing Log, maintained by the Lab Team, is part of the Pump Schedule.") == {
        ("Dosing Log", "owned_by", "Lab Team"),
        ("Dosing Log", "part_of", "Pump Schedule"),
    }
    assert read("Pump Schedule: maintained by the Lab Team, managed by the Site Manager.") == {
        ("Pump Schedule", "owned_by", "Lab Team"),
        ("Pump Schedule", "owned_by", "Site Manager"),
    }
    # Without the comma the participle modifies the noun before it: no statement.
    assert read("The freezer maintained by the Lab Team is part of the Filter Hall.") == set()


def test_it_stands_for_the_entry_only_before_any_other_name(read):
    assert read("It needs the Flow Meter.") == {("@self", "requires", "Flow Meter")}
    assert read("The Lab Team used the Paper Rota; it is replaced by the Pump Schedule.") == set()


def test_conditions_restrictions_and_hedges_drop_the_sentence(read):
    assert read("When the Telemetry Hub fails, the Control Room needs the Paper Rota.") == set()
    assert read("The Control Room needs the Paper Rota only on Sundays.") == set()
    assert read("We think the Lab Team owns the Dosing Log.") == set()
    assert read("The Control Room doesn't need the Paper Rota.") == set()
    assert read("The Control Room isn't responsible for the Flow Meter.") == set()
    # A "when" after the main clause in the present is a condition too (branch extract, issue
    # 21: the gold of the independent sets); in the past it only dates an event
    # (tests/graph/test_extraction_conditions.py).
    assert read("The Pump Schedule comes after the Paper Rota when a shift changes.") == set()
    assert read("The Pump Schedule comes after the Paper Rota.") == {
        ("Paper Rota", "precedes", "Pump Schedule")
    }


def test_an_alias_starting_with_the_does_not_swallow_a_longer_name(bank, works):
    sentence = "The Flow Meter needs the flow of the river."
    found = MentionIndex(bank).find(sentence)
    assert [sentence[m.start : m.end] for m in found][0] == "Flow Meter"


def test_a_field_label_states_the_entry_s_relations(bank, works, make_entry):
    doc = make_entry("Night Dosing", content="Night Dosing.\nRequires: Flow Meter, Telemetry Hub.")
    extract_edges(bank, entries=[doc.short_id])
    got = {
        (p.from_entry_id, p.type.name, p.to_entry_id)
        for p in EdgeProposal.objects.filter(bank=bank).select_related("type")
    }
    assert got == {
        (doc.pk, "requires", works["Flow Meter"].pk),
        (doc.pk, "requires", works["Telemetry Hub"].pk),
    }


def test_the_entry_s_head_noun_or_kind_names_the_entry(bank, works, make_entry):
    doc = make_entry(
        "Backwash Check",
        kind="process",
        content=(
            "The check needs the Flow Meter. "  # head noun of the title
            "The process is maintained by the Lab Team. "  # the entry's kind
            "The meter needs the Telemetry Hub. "  # another noun: not the entry, but the
            # one entry whose title ends in "Meter" (head-noun references, branch extract3)
            "The Control Room owns the Dosing Log, and the check precedes the Pump Schedule."
        ),
    )
    extract_edges(bank, entries=[doc.short_id])
    got = {
        (p.from_entry_id, p.type.name, p.to_entry_id)
        for p in EdgeProposal.objects.filter(bank=bank).select_related("type")
    }
    assert got == {
        (doc.pk, "requires", works["Flow Meter"].pk),
        (doc.pk, "owned_by", works["Lab Team"].pk),
        (works["Dosing Log"].pk, "owned_by", works["Control Room"].pk),
        (works["Flow Meter"].pk, "requires", works["Telemetry Hub"].pk),
        # "the check" after another name may be that name's check: not read as the entry.
    }


def test_an_object_name_that_modifies_a_noun_is_no_object(read):
    assert read("The Control Room follows the Pump Schedule checklist.") == set()
    # ... unless a predicative word or a noun that classifies the name follows it.
    assert read("The Control Room needs the Filter Hall clear.") == {
        ("Control Room", "requires", "Filter Hall")
    }
    assert read("The Filter Hall is managed by the Lab Team staff.") == {
        ("Filter Hall", "owned_by", "Lab Team")
    }
