"""System-written notes read right from each end of their edge.

For each system write (supersede on retire, split, bridging on delete, and a merge that
re-points such an edge) the note is read from the ``from`` end and from the ``to`` end: in the
entry GET edges, the fold's pointers and links, traverse and the context bundle.
"""

from __future__ import annotations

import pytest

from graph.curation.lifecycle import retire_entry
from graph.curation.split import split_entry
from graph.edges.links import link
from graph.edges.notes import SEPARATOR, note_as_seen, note_ends, notes_as_seen, two_ended
from graph.models import Edge

pytestmark = pytest.mark.django_db

API = "/api/v1/banks/acme"


def edge_note(client, entry_id: str, other_id: str) -> tuple[str, str]:
    """(direction, note) of the entry's edge to ``other_id`` in its GET."""
    body = client.get(f"{API}/entries/{entry_id}").json()
    (edge,) = [e for e in body["edges"] if e["entry"]["id"] == other_id]
    return edge["direction"], edge["note"]


def test_note_ends_and_directions():
    note = two_ended("Seen from the source.", "Seen from the target.")
    assert note_ends(note) == ("Seen from the source.", "Seen from the target.")
    assert note_as_seen(note, "out") == "Seen from the source."
    assert note_as_seen(note, "in") == "Seen from the target."
    assert note_as_seen("A person's note.", "in") == "A person's note."  # plain: as written
    results = [{"related": [{"direction": "in", "note": note}], "links": [], "neighbors": []}]
    notes_as_seen(results)
    assert results[0]["related"][0]["note"] == "Seen from the target."


def test_supersede_on_retire_reads_right_from_both_ends(client_rw, bank, make_entry):
    old = make_entry("Deploy with the Jenkins pipeline")
    new = make_entry("Deploy with GitHub Actions")
    retire_entry(
        bank, old.short_id, "moved to Actions", "pipeline deleted", superseded_by=new.short_id
    )
    direction, note = edge_note(client_rw, new.short_id, old.short_id)
    assert direction == "out"
    assert note == f"Replaces {old.short_id}, which is retired; read this one instead."
    direction, note = edge_note(client_rw, old.short_id, new.short_id)
    assert direction == "in"
    assert note == f"Replaced by {new.short_id}; read that one instead."
    assert SEPARATOR not in note
    # The edge itself: each end's reading in its own field, never the stored separator.
    (edge_id,) = Edge.objects.filter(from_entry=new, to_entry=old).values_list("pk", flat=True)
    edge = client_rw.get(f"{API}/edges/{edge_id}").json()
    assert edge["note"] == f"Replaces {old.short_id}, which is retired; read this one instead."
    assert edge["note_in"] == f"Replaced by {new.short_id}; read that one instead."


def test_the_fold_reads_each_pointer_from_its_result(client_rw, bank, make_entry, hashing_embedder):
    from kb.models import Entry
    from kb.services.embedding import embed_entries

    old = make_entry("Deploy with the Jenkins pipeline", content="Deploy steps, Jenkins.")
    new = make_entry("Deploy with GitHub Actions", content="Deploy steps, Actions.")
    retire_entry(bank, old.short_id, "moved", "pipeline deleted", superseded_by=new.short_id)
    embed_entries(Entry.objects.filter(bank=bank))
    expected = {
        new.short_id: f"Replaces {old.short_id}, which is retired; read this one instead.",
        old.short_id: f"Replaced by {new.short_id}; read that one instead.",
    }
    readers = set()
    for fold in (True, False):
        answer = client_rw.post(
            f"{API}/query", {"query": "deploy steps", "fold": fold}, format="json"
        ).json()
        for result in answer["results"]:
            for name in ("related", "neighbors", "links"):
                for item in result[name]:
                    # Each pointer's note is read from the result that carries it.
                    assert item["note"] == expected[result["id"]], (name, item)
                    readers.add(result["id"])
    assert readers == {new.short_id, old.short_id}  # read from both ends


def test_context_bundle_shows_the_reading_of_its_result(client_rw, bank, make_entry):
    # No vectors in this test: the lexical arm finds only ``new``; ``old`` is its neighbour.
    old = make_entry("Jenkins runbook", content="Use the job named build-main.")
    new = make_entry("Deploy with GitHub Actions", content="Deploy steps run in GitHub Actions.")
    retire_entry(bank, old.short_id, "moved", "pipeline deleted", superseded_by=new.short_id)
    bundle = client_rw.post(
        f"{API}/context",
        {"task": "deploy steps github actions", "budget_tokens": 1500},
        format="json",
    ).json()
    assert f"Replaces {old.short_id}, which is retired; read this one instead" in bundle["text"]
    assert SEPARATOR not in bundle["text"]


def test_traverse_gives_the_reading_from_each_end(client_rw, bank, make_entry):
    old, new = make_entry("Old runbook"), make_entry("New runbook")
    retire_entry(
        bank, old.short_id, "rewritten", "new runbook published", superseded_by=new.short_id
    )
    walked = client_rw.post(
        f"{API}/traverse",
        {"start": new.short_id, "relations": ["supersedes"], "direction": "out", "max_depth": 1},
        format="json",
    ).json()
    (edge,) = walked["edges"].values()
    assert edge["from"] == new.short_id
    assert edge["note"].startswith(f"Replaces {old.short_id}")
    assert edge["note_in"] == f"Replaced by {new.short_id}; read that one instead."


def test_split_reads_right_from_both_ends(client_rw, bank, make_entry):
    whole = make_entry("Release checklist", content="Tag, build, deploy, announce.")
    result = split_entry(
        bank,
        whole.short_id,
        [
            {
                "title": "Release: tag and build",
                "content": "Tag, build.",
                "lifetime": {"durable": True},
            },
            {
                "title": "Release: deploy and announce",
                "content": "Deploy, announce.",
                "lifetime": {"durable": True},
            },
        ],
        reason="two audiences",
    )
    part = result.parts[0]
    direction, note = edge_note(client_rw, part.short_id, whole.short_id)
    assert direction == "out" and note.startswith(f"Split out of {whole.short_id}")
    direction, note = edge_note(client_rw, whole.short_id, part.short_id)
    assert direction == "in"
    assert note == f"{part.short_id} holds a part split out of this one; read it for that part."


def test_bridging_on_delete_reads_right_from_both_ends(client_rw, bank, make_entry):
    x, b, y = (
        make_entry("Checkout service"),
        make_entry("Payments gateway"),
        make_entry("Card vault"),
    )
    link(bank, {"from": x.short_id, "to": b.short_id, "relation": "see_also", "note": "Pays."})
    link(bank, {"from": b.short_id, "to": y.short_id, "relation": "see_also", "note": "Stores."})
    deleted = client_rw.delete(f"{API}/entries/{b.short_id}?reason=folded+into+checkout")
    assert deleted.status_code == 200 and deleted.json()["bridged"] == 1
    direction, note = edge_note(client_rw, x.short_id, y.short_id)
    assert direction == "out"
    assert note.startswith(f"Bridged over deleted {b.short_id}")
    assert note.endswith(f"this one led to {y.short_id} through it.")
    direction, note = edge_note(client_rw, y.short_id, x.short_id)
    assert direction == "in" and note.endswith(f"{x.short_id} led to this one through it.")


def test_merge_keeps_both_readings_and_names_the_survivor(client_rw, bank, make_entry):
    old = make_entry("Old deploy notes")
    new, keep = make_entry("Deploy notes (draft)"), make_entry("Deploy notes")
    retire_entry(bank, old.short_id, "redone", "new notes published", superseded_by=new.short_id)
    merged = client_rw.post(
        f"{API}/merges",
        {"keep": keep.short_id, "away": new.short_id, "reason": "same page"},
        format="json",
    )
    assert merged.status_code == 201, merged.content
    direction, note = edge_note(client_rw, keep.short_id, old.short_id)
    assert direction == "out" and note.startswith(f"Replaces {old.short_id}")
    direction, note = edge_note(client_rw, old.short_id, keep.short_id)
    assert direction == "in" and note == f"Replaced by {keep.short_id}; read that one instead."
    current = Edge.objects.get(from_entry=keep, to_entry=old, invalidated_at__isnull=True)
    assert new.short_id not in current.note


def test_a_persons_note_is_untouched_by_a_merge(client_rw, bank, make_entry):
    a, away, keep = make_entry("A"), make_entry("Away"), make_entry("Keep")
    text = f"Explains why {away.short_id} exists."
    link(bank, {"from": a.short_id, "to": away.short_id, "relation": "see_also", "note": text})
    client_rw.post(
        f"{API}/merges",
        {"keep": keep.short_id, "away": away.short_id, "reason": "dup"},
        format="json",
    )
    assert edge_note(client_rw, a.short_id, keep.short_id) == ("out", text)


def test_the_entry_admin_shows_each_end_its_reading(admin_client, bank, make_entry):
    from django.urls import reverse

    old, new = make_entry("Old runbook"), make_entry("New runbook")
    retire_entry(
        bank, old.short_id, "rewritten", "new runbook published", superseded_by=new.short_id
    )
    page = admin_client.get(reverse("admin:kb_entry_change", args=[old.pk])).content.decode()
    assert f"Replaced by {new.short_id}; read that one instead." in page
    assert SEPARATOR not in page
    page = admin_client.get(reverse("admin:kb_entry_change", args=[new.pk])).content.decode()
    assert f"Replaces {old.short_id}, which is retired; read this one instead." in page
    assert Edge.objects.get(from_entry=new, to_entry=old).note.count(SEPARATOR) == 1  # stored
