"""The demo loader (`manage.py load_demo`, run by `make run`) adds only what the demo banks
never had: after curators delete, merge, edit, link and unlink demo data it still succeeds,
twice, undoing nothing and duplicating nothing (issue 22)."""

import pytest
from django.core.management import call_command

from graph.curation.delete import delete_entry
from graph.curation.merge import merge_entries
from graph.edges.links import link, unlink
from graph.models import Alias, Edge
from kb.models import Bank, Entry, Operation
from kb.services.bulk import import_bank
from kb.services.entries import find_entry, update_entry

pytestmark = pytest.mark.django_db


def snapshot(bank: Bank) -> dict:
    """What a curator sees of the bank: entries with status and text, current edges, aliases."""
    return {
        "entries": sorted(
            Entry.objects.filter(bank=bank).values_list("short_id", "status", "title", "content")
        ),
        "edges": sorted(
            Edge.objects.filter(bank=bank, invalidated_at__isnull=True).values_list(
                "from_entry__short_id", "to_entry__short_id", "type__name", "note"
            )
        ),
        "aliases": sorted(Alias.objects.filter(bank=bank).values_list("normalized", "entry_id")),
    }


def current_edge(bank, source, target, relation):
    return Edge.objects.get(
        bank=bank,
        from_entry__short_id=source,
        to_entry__short_id=target,
        type__name=relation,
        invalidated_at__isnull=True,
    )


def test_load_demo_after_curators_changed_the_bank_adds_nothing_back(hashing_embedder):
    call_command("load_demo")
    eng = Bank.objects.get(slug="eng")
    first = snapshot(eng)
    assert len(first["entries"]) == 156 and first["edges"]

    # Curators at work: delete the entry, unlink, merge two teams, edit, link.
    delete_entry(eng, "29605f1a", "superseded by the runbook")
    unlinked = current_edge(eng, "8ffbc2b5", "de79a620", "owned_by")  # checkout → payments
    unlink(eng, unlinked.pk, "ownership moved")
    keep, away = find_entry(eng, "team:payments"), find_entry(eng, "team:insights")
    merge_entries(eng, keep.short_id, away.short_id, "one team now")
    edited = find_entry(eng, "container:runbooks")
    update_entry(eng, edited, {"title": "Runbooks (curated)"})
    link(
        eng,
        {"from": "08683ba1", "to": "49ddc2f8", "relation": "see_also", "note": "Sibling list."},
        reason="curator link",
    )
    curated = snapshot(eng)
    operations = Operation.objects.filter(bank=eng).count()

    for _ in range(2):
        call_command("load_demo")
        assert snapshot(eng) == curated
    assert Operation.objects.filter(bank=eng).count() == operations  # not even an empty import
    assert Entry.objects.get(bank=eng, short_id="29605f1a").status == "deleted"
    assert Entry.objects.get(pk=away.pk).status == "merged"
    assert Entry.objects.get(pk=edited.pk).title == "Runbooks (curated)"
    assert not Edge.objects.filter(
        bank=eng,
        from_entry_id=unlinked.from_entry_id,
        to_entry_id=unlinked.to_entry_id,
        type_id=unlinked.type_id,
        invalidated_at__isnull=True,
    ).exists()


def test_missing_only_import_still_adds_what_the_bank_never_had(bank, hashing_embedder):
    """The loader is not a no-op: a new line of a later demo file is added."""
    text = (
        '{"type": "entry", "id": "0000aaaa", "title": "A", "kind": "fact"}\n'
        '{"type": "entry", "id": "0000bbbb", "title": "B", "kind": "fact"}\n'
    )
    import_bank(bank, text, missing_only=True)
    delete_entry(bank, "0000aaaa", "gone")
    grown = text + (
        '{"type": "entry", "id": "0000cccc", "title": "C", "kind": "fact"}\n'
        '{"type": "edge", "from": "0000cccc", "to": "0000bbbb", "relation": "see_also"}\n'
        '{"type": "edge", "from": "0000cccc", "to": "0000aaaa", "relation": "see_also"}\n'
    )
    result = import_bank(bank, grown, missing_only=True)
    assert result["created"] == 1 and result["edges_created"] == 1 and result["skipped"] == 3
    assert Entry.objects.get(bank=bank, short_id="0000aaaa").status == "deleted"
    again = import_bank(bank, grown, missing_only=True)
    assert again["operation"] is None and again["skipped"] == 5
