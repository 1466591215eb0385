"""A merge reports every collapsed edge with both notes and keeps the away note as evidence;
a revert that names blocking operations converges."""

import pytest

from graph.curation.merge import merge_entries
from graph.curation.revert import revert_operation
from graph.edges.links import link, unlink
from graph.models import Edge
from kb.errors import Conflict

pytestmark = pytest.mark.django_db


def test_a_collapsed_edge_is_reported_with_both_notes_and_its_note_kept(bank, make_entry, linked):
    keep, away, x, y = make_entry("Keep"), make_entry("Away"), make_entry("X"), make_entry("Y")
    kept = linked(x, keep, "cites", note="The runbook keep follows.")
    linked(x, away, "cites", note="Why the retry limit is three.")
    linked(away, y, "see_also", note="")  # re-pointed, not collapsed
    same = linked(keep, y, "part_of", note="Same words.")
    linked(away, y, "part_of", note="Same words.")  # collapses; identical note: nothing to keep
    result = merge_entries(bank, keep.short_id, away.short_id, "duplicates")
    body = result.as_json()
    assert body["edges_collapsed"] == 2 and len(body["collapsed_edges"]) == 2
    by_into = {c["into"]: c for c in body["collapsed_edges"]}
    cites = by_into[kept.pk]
    assert cites["note_kept"] == "The runbook keep follows."
    assert cites["note_away"] == "Why the retry limit is three."
    assert cites["relation"] == "cites" and cites["direction"] == "in"
    assert cites["other"] == x.short_id and cites["away_note_kept_as_evidence"] is True
    assert by_into[same.pk]["away_note_kept_as_evidence"] is False
    kept.refresh_from_db()
    assert kept.evidence["merged_notes"] == [
        {
            "from": away.short_id,
            "edge": cites["edge"],
            "relation": "cites",
            "note": "Why the retry limit is three.",
        }
    ]
    assert kept.invalidated_at is None and kept.note == "The runbook keep follows."
    # The evidence is part of the merge: a revert takes it away again.
    revert_operation(bank, result.operation.pk, "wrong merge")
    kept.refresh_from_db()
    assert "merged_notes" not in kept.evidence


def test_merge_api_lists_collapsed_edges(client_rw, bank, make_entry, linked):
    keep, away, x = make_entry("Keep"), make_entry("Away"), make_entry("X")
    linked(keep, x, "cites", note="Keep's reason.")
    linked(away, x, "cites", note="Away's reason.")
    r = client_rw.post(
        "/api/v1/banks/acme/merges",
        {"keep": keep.short_id, "away": away.short_id, "reason": "dupes"},
        format="json",
    )
    assert r.status_code == 201, r.content
    (collapsed,) = r.json()["collapsed_edges"]
    assert (collapsed["note_kept"], collapsed["note_away"]) == ("Keep's reason.", "Away's reason.")


def test_a_reverted_operation_no_longer_blocks(bank, make_entry):
    a, b = make_entry("A"), make_entry("B")
    edge = link(bank, {"from": a.short_id, "to": b.short_id, "relation": "cites"})
    linked_op = Edge.history.model.objects.get(id=edge.pk, history_type="+").operation_id
    unlink(bank, edge.pk, "no longer holds")
    unlinked_op = Edge.history.model.objects.filter(id=edge.pk).order_by("-history_id")[0]
    with pytest.raises(Conflict) as refused:
        revert_operation(bank, linked_op, "undo the link")
    assert refused.value.code == "revert_conflict"
    assert refused.value.extra["operations"] == [unlinked_op.operation_id]
    revert_operation(bank, unlinked_op.operation_id, "undo the unlink")
    revert_operation(bank, linked_op, "undo the link")  # the reverted unlink no longer blocks
    assert not Edge.objects.filter(pk=edge.pk).exists()


def test_a_relink_after_an_unlink_blocks_the_revert_of_the_unlink(bank, make_entry):
    a, b = make_entry("A"), make_entry("B")
    first = link(bank, {"from": a.short_id, "to": b.short_id, "relation": "cites"})
    unlink(bank, first.pk, "wrong")
    unlink_op = Edge.history.model.objects.filter(id=first.pk).order_by("-history_id")[0]
    second = link(bank, {"from": a.short_id, "to": b.short_id, "relation": "cites"})
    relink_op = Edge.history.model.objects.get(id=second.pk, history_type="+").operation_id
    with pytest.raises(Conflict) as refused:  # reopening the first would clash with the second
        revert_operation(bank, unlink_op.operation_id, "undo the unlink")
    assert refused.value.extra["operations"] == [relink_op]
    revert_operation(bank, relink_op, "undo the relink")
    revert_operation(bank, unlink_op.operation_id, "undo the unlink")
    first.refresh_from_db()
    assert first.invalidated_at is None
