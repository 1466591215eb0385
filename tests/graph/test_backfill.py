"""Backfills: citations by id, metadata links and 'Related:' headers become audited edges."""

import itertools
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from config.celery import app as celery_app
from graph.curation.delete import delete_entry
from graph.curation.merge import merge_entries
from graph.edges.links import unlink
from graph.ingest.backfill import (
    NEUTRAL_CITATION_NOTE,
    backfill_citations,
    backfill_metadata,
    citing_sentence,
)
from graph.ingest.headers import (
    NO_VERB_COMMA,
    NO_VERB_STATED,
    backfill_headers,
    header_lines,
    parse_header,
)
from graph.models import Edge
from graph.resolution.aliases import add_alias, resolve
from graph.tasks import backfill_citations_task, parse_headers_task
from kb.models import Operation

SEED_LINE = (
    "Related: supersedes the earlier ruling and record 0034; "
    "leaves record 0016's exclusions in place"
)


def edges_of(bank, source=None):
    qs = Edge.objects.filter(bank=bank, invalidated_at__isnull=True).select_related(
        "type", "from_entry", "to_entry"
    )
    if source:
        qs = qs.filter(source=source)
    return {(e.from_entry.short_id, e.to_entry.short_id, e.type.name): e for e in qs}


@pytest.fixture
def eager_celery():
    """No broker in tests: tasks run in-process through ``.delay``."""
    saved = (celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates)
    celery_app.conf.update(task_always_eager=True, task_eager_propagates=True)
    yield
    celery_app.conf.update(task_always_eager=saved[0], task_eager_propagates=saved[1])


# --- citations ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_citation_becomes_cites_edge_with_citing_sentence(bank, make_entry):
    recipe = make_entry("Login recipe", content="Start a browser context and log in once.")
    verify = make_entry(
        "Verification recipe",
        content=(
            "Run the smoke test first.\n"
            f"The session-create call from {recipe.short_id} needs HTTP/1.1 from curl. "
            "Then check the dashboard."
        ),
    )
    ops_before = Operation.objects.filter(bank=bank).count()

    result = backfill_citations(bank)

    assert (result.edges_created, result.skipped_existing, result.unresolved) == (1, 0, [])
    edge = edges_of(bank)[(verify.short_id, recipe.short_id, "cites")]
    assert edge.source == "citation_backfill"
    assert edge.note == f"The session-create call from {recipe.short_id} needs HTTP/1.1 from curl."
    assert edge.evidence["sentence"] == edge.note
    assert edge.evidence["field"] == "content"
    op = Operation.objects.get(pk=result.operation)
    assert op.kind == "backfill" and op.details["edges"] == [edge.pk]
    assert Operation.objects.filter(bank=bank).count() == ops_before + 1
    assert edge.history.get().operation_id == op.pk


@pytest.mark.django_db
def test_citation_skips_self_and_foreign_bank_ids(bank, other_bank, make_entry):
    foreign = make_entry("Globex entry", in_bank=other_bank)
    target = make_entry("Target")
    citing = make_entry("Citing", content="Placeholder.")
    citing.content = (
        f"This is {citing.short_id} itself. Globex has {foreign.short_id}. "
        f"See {target.short_id} for the fix; also {target.short_id} again."
    )
    citing.summary = f"Points at {target.short_id}."
    citing.save()

    result = backfill_citations(bank)

    assert result.edges_created == 1  # one edge per cited entry, however often it is named
    assert set(edges_of(bank)) == {(citing.short_id, target.short_id, "cites")}
    assert foreign.short_id in result.unresolved  # reported, never linked across banks
    assert citing.short_id not in result.unresolved
    assert not Edge.objects.filter(bank=other_bank).exists()
    assert not Edge.objects.filter(to_entry=foreign).exists()


@pytest.mark.django_db
def test_citation_rerun_is_idempotent_and_opens_no_operation(bank, make_entry):
    a = make_entry("A")
    make_entry("B", content=f"Read {a.short_id} first.")
    make_entry("C", content=f"Also read {a.short_id}.")
    first = backfill_citations(bank)
    assert first.edges_created == 2 and first.operation is not None
    ops = Operation.objects.filter(bank=bank).count()

    again = backfill_citations(bank)

    assert again.operation is None
    assert (again.edges_created, again.skipped_existing) == (0, 2)
    assert Operation.objects.filter(bank=bank).count() == ops
    assert Edge.objects.filter(bank=bank).count() == 2


@pytest.mark.django_db
def test_citation_rerun_costs_a_constant_number_of_queries(
    bank, make_entry, django_assert_max_num_queries
):
    targets = [make_entry(f"T{i}") for i in range(6)]
    for i, target in enumerate(targets):
        make_entry(f"C{i}", content=f"See {target.short_id}.", summary="Nothing cited.")
    assert backfill_citations(bank).edges_created == 6
    with django_assert_max_num_queries(8):  # no query per entry or per citation
        assert backfill_citations(bank).skipped_existing == 6


@pytest.mark.django_db
def test_citation_of_merged_id_links_the_survivor_and_deleted_is_unresolved(
    bank, make_entry, monkeypatch
):
    # Ids with a letter: an all-digit token (a date, a count) is never reported unresolved,
    # and one random id in ~40 is all digits (the test failed once in a whole-suite run).
    ids = iter(f"c{n:07x}" for n in itertools.count(1))
    monkeypatch.setattr("kb.models.new_short_id", lambda: next(ids))
    keep, away, gone = make_entry("Keep"), make_entry("Away"), make_entry("Gone")
    assert gone.short_id == "c0000003"
    merge_entries(bank, keep.short_id, away.short_id, "duplicates")
    delete_entry(bank, gone.short_id, "obsolete")
    citing = make_entry("Citing", content=f"Built on {away.short_id}. Not {gone.short_id}.")

    result = backfill_citations(bank)

    edge = edges_of(bank)[(citing.short_id, keep.short_id, "cites")]
    assert edge.evidence["cited_id"] == away.short_id
    assert result.unresolved == [gone.short_id]
    assert result.edges_created == 1


@pytest.mark.django_db
def test_citing_sentence_that_copies_the_target_falls_back_to_a_neutral_note(bank, make_entry):
    fact = "the nightly export writes every invoice to the billing bucket at two"
    target = make_entry("Export", content=f"In short, {fact}.")
    sentence = f"As {'{id}'} says, {fact}."
    citing = make_entry("Citing", content=sentence.replace("{id}", target.short_id))

    backfill_citations(bank)

    edge = edges_of(bank)[(citing.short_id, target.short_id, "cites")]
    assert edge.note == NEUTRAL_CITATION_NOTE
    assert edge.evidence["sentence"] == citing.content
    assert "note_withheld" in edge.evidence


@pytest.mark.django_db
def test_retracted_backfill_edge_is_not_recreated(bank, make_entry):
    a = make_entry("A")
    make_entry("B", content=f"See {a.short_id}.")
    edge_id = backfill_citations(bank).edges[0]
    unlink(bank, edge_id, "not a real citation")

    again = backfill_citations(bank)

    assert (again.operation, again.edges_created, again.skipped_retracted) == (None, 0, 1)
    assert not Edge.objects.filter(bank=bank, invalidated_at__isnull=True).exists()


def test_citing_sentence_is_trimmed_and_bulleted_lines_stand_alone():
    text = "First line.\n- Use abcd1234 here, it works!  Next sentence."
    start = text.index("abcd1234")
    assert citing_sentence(text, start, start + 8) == "Use abcd1234 here, it works!"
    long = "word " * 200 + "abcd1234 " + "word " * 200
    start = long.index("abcd1234")
    clipped = citing_sentence(long, start, start + 8)
    assert "abcd1234" in clipped and len(clipped) <= 402 and clipped.startswith("…")


# --- metadata -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_metadata_links_become_typed_edges(bank, make_entry):
    old = make_entry("Old ruling")
    parent = make_entry("Parent")
    sibling = make_entry("Sibling")
    origin = make_entry("Origin", key="record:0007")
    entry = make_entry(
        "New ruling",
        metadata={
            "replaces": old.short_id,
            "split_from": [parent.short_id, "deadbeef"],
            "recovered_from": "record:0007",
            "supersedes": sibling.short_id,
            "owner": "team-a",
        },
    )

    result = backfill_metadata(bank)

    assert set(edges_of(bank, "metadata_backfill")) == {
        (entry.short_id, old.short_id, "supersedes"),
        (entry.short_id, parent.short_id, "split_from"),
        (entry.short_id, origin.short_id, "derived_from"),
        (entry.short_id, sibling.short_id, "supersedes"),
    }
    assert result.unresolved == ["deadbeef"]
    edge = edges_of(bank)[(entry.short_id, old.short_id, "supersedes")]
    assert edge.evidence == {"metadata_key": "replaces", "value": old.short_id}
    assert Operation.objects.get(pk=result.operation).kind == "backfill"
    assert backfill_metadata(bank).operation is None


# --- header parsing -------------------------------------------------------------------------


def test_parse_header_reads_the_seed_line():
    refs = parse_header(SEED_LINE)
    assert [(r.text, r.relation) for r in refs] == [
        ("record 0034", "supersedes"),
        ("record 0016", "see_also"),
    ]
    supersedes, leaves = refs
    assert supersedes.phrase == "supersedes ... and record 0034"
    assert supersedes.lookups[0] == "record:0034"
    assert leaves.verb == "leaves"
    assert leaves.phrase == "leaves record 0016's exclusions in place"
    assert "not a typed relation" in leaves.why


def test_parse_header_comma_does_not_carry_the_verb():
    refs = parse_header("Related: refines record 0012, record 0013, record 0014 and record 0015")
    assert [(r.text, r.relation, r.why) for r in refs] == [
        ("record 0012", "clarifies", ""),
        ("record 0013", "see_also", NO_VERB_COMMA),
        ("record 0014", "see_also", NO_VERB_COMMA),
        ("record 0015", "see_also", NO_VERB_COMMA),
    ]
    assert refs[0].phrase == "refines record 0012"


def test_parse_header_verb_carries_across_real_connectors_only():
    refs = parse_header(
        "Related: amends record 1 and record 2 as well as record 3 plus record 4, and record 5"
    )
    assert [r.relation for r in refs] == ["corrects"] * 5  # ", and" is a real connector
    assert refs[1].phrase == "amends ... and record 2"


def test_parse_header_words_after_a_bare_comma_do_not_restore_the_verb():
    refs = parse_header("Related: supersedes record 1, the old ruling and record 2")
    assert [(r.relation, r.why) for r in refs] == [("supersedes", ""), ("see_also", NO_VERB_COMMA)]
    refs = parse_header("Related: record 1, record 2")  # no verb at all: nothing to lose
    assert [r.why for r in refs] == [NO_VERB_STATED, NO_VERB_STATED]


def test_parse_header_semicolon_ends_the_clause():
    refs = parse_header("Related: supersedes record 0001; record 0002; cites record 0003")
    assert [(r.text, r.relation, r.why) for r in refs] == [
        ("record 0001", "supersedes", ""),
        ("record 0002", "see_also", NO_VERB_STATED),
        ("record 0003", "cites", ""),
    ]


def test_parse_header_verbs_ids_keys_quotes_and_passives():
    refs = parse_header(
        'Related: split from service:reports; part of "Billing runbook"; '
        "superseded by a1b2c3d4; extends records 0040 and 0041; builds on record 9"
    )
    got = [(r.text, r.relation, r.reversed) for r in refs]
    assert got == [
        ("service:reports", "split_from", False),
        ('"Billing runbook"', "part_of", False),
        ("a1b2c3d4", "supersedes", True),
        ("records 0040", "derived_from", False),
        ("record 0041", "derived_from", False),
        ("record 9", "derived_from", False),
    ]
    assert refs[1].lookups == ("Billing runbook",)
    assert refs[5].lookups == ("record:9", "record:0009")


def test_header_lines_join_indented_continuations():
    content = (
        "Title\nRelated: supersedes record 0034; leaves record 0016's\n  exclusions in place\nBody"
    )
    assert header_lines(content) == [
        "Related: supersedes record 0034; leaves record 0016's exclusions in place"
    ]


# --- header backfill ------------------------------------------------------------------------


@pytest.fixture
def records(make_entry):
    return {
        n: make_entry(f"Decision record {n}", key=f"record:{n}") for n in ("0016", "0034", "0012")
    }


@pytest.mark.django_db
def test_header_backfill_end_to_end(bank, make_entry, records):
    ruling = make_entry(
        "Decision record 0035",
        key="record:0035",
        content=f"{SEED_LINE}\nRelated: refines record 0012, record 0099\n\nThe ruling itself.",
    )

    result = backfill_headers(bank)

    edges = edges_of(bank, "header_parse")
    assert set(edges) == {
        (ruling.short_id, records["0034"].short_id, "supersedes"),
        (ruling.short_id, records["0016"].short_id, "see_also"),
        (ruling.short_id, records["0012"].short_id, "clarifies"),
    }
    supersedes = edges[(ruling.short_id, records["0034"].short_id, "supersedes")]
    assert supersedes.evidence["source_phrase"] == "supersedes ... and record 0034"
    leaves = edges[(ruling.short_id, records["0016"].short_id, "see_also")]
    assert leaves.evidence["verb"] == "leaves"
    assert leaves.note == "leaves record 0016's exclusions in place"
    assert result.unresolved == ["record 0099"]  # reported, not guessed (0016 and 0034 are close)
    assert Operation.objects.get(pk=result.operation).kind == "backfill"

    again = backfill_headers(bank)
    assert (again.operation, again.edges_created, again.skipped_existing) == (None, 0, 3)


@pytest.mark.django_db
def test_header_reference_is_never_guessed_fuzzily(bank, make_entry):
    runbook = make_entry("Billing runbook v2")
    step = make_entry("Refund step", content='Related: part of "Billing runbook"')
    assert resolve(bank, "Billing runbook").matched == "fuzzy"  # resolve alone would guess

    result = backfill_headers(bank)

    assert (result.operation, result.unresolved) == (None, ['"Billing runbook"'])
    add_alias(bank, runbook, "Billing runbook")  # a curator names it: now it resolves
    assert backfill_headers(bank).edges_created == 1
    assert set(edges_of(bank, "header_parse")) == {(step.short_id, runbook.short_id, "part_of")}


@pytest.mark.django_db
def test_header_backfill_reversed_verb_points_from_the_reference(bank, make_entry, records):
    newer = make_entry("Newer")
    old = make_entry("Old", content=f"Related: superseded by {newer.short_id}")
    backfill_headers(bank)
    assert set(edges_of(bank, "header_parse")) == {(newer.short_id, old.short_id, "supersedes")}


# --- commands and tasks ---------------------------------------------------------------------


@pytest.mark.django_db
def test_backfill_commands_run_and_summarise(bank, make_entry, records):
    a = make_entry("A", metadata={"supersedes": records["0012"].short_id})
    make_entry("B", content=f"Related: cites record 0034\nSee {a.short_id} first.")
    out, err = StringIO(), StringIO()

    call_command("backfill_citations", "acme", stdout=out, stderr=err)

    assert "citations: 1 edges created" in out.getvalue()
    assert "metadata: 1 edges created" in out.getvalue()
    op = Operation.objects.filter(bank=bank, kind="backfill").latest("id")
    assert op.actor == "command:backfill_citations"

    out = StringIO()
    call_command("parse_headers", "acme", stdout=out, stderr=StringIO())
    assert "headers: 1 edges created" in out.getvalue()
    with pytest.raises(CommandError, match="No such bank"):
        call_command("parse_headers", "nope", stdout=StringIO(), stderr=StringIO())


@pytest.mark.django_db
def test_backfill_tasks_run_eagerly_through_delay(bank, make_entry, records, eager_celery):
    a = make_entry("A", metadata={"replaces": records["0012"].short_id})
    make_entry("B", content=f"Related: supersedes record 0034\nBuilds on {a.short_id}.")

    citations = backfill_citations_task.delay(bank.pk).get()
    headers = parse_headers_task.delay(bank.pk).get()

    assert citations["citations"]["edges_created"] == 1
    assert citations["metadata"]["edges_created"] == 1
    assert headers["headers"]["edges_created"] == 1
    assert {e.source for e in edges_of(bank).values()} == {
        "citation_backfill",
        "metadata_backfill",
        "header_parse",
    }
    op = Operation.objects.get(pk=headers["headers"]["operation"])
    assert op.actor == "celery:parse_headers"
    # the same run through the service now finds everything in place
    assert backfill_citations(bank).skipped_existing == 1
    assert backfill_citations_task.delay(999999).get() == {
        "bank": 999999,
        "error": "bank_not_found",
    }
