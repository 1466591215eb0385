"""Banks, entry kinds and relation types: the admin's add and change pages run the same
action as a direct call (same rows, same ``configure`` operation), and a refused value shows
on the form and writes nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from graph.actions.vocabulary import SaveEdgeType
from graph.models import EdgeType
from kb.actions.banks import SaveBank, SaveEntryKind
from kb.actions.base import Caller
from kb.actions.staff import execute_as
from kb.models import Bank, EntryKind, Operation, OperationKind

pytestmark = pytest.mark.django_db


@pytest.fixture
def bank():
    return Bank.objects.create(slug="b1", name="B1")


def _row_ops(bank):
    return [
        (op.kind, op.actor, [(r["model"], r["change"], r["fields"]) for r in op.details["rows"]])
        for op in Operation.objects.filter(bank=bank, kind=OperationKind.CONFIGURE).order_by("pk")
    ]


def _fields(row, names):
    return {name: getattr(row, name) for name in names}


def test_bank_add_page_writes_what_the_action_writes(admin_client, admin_user):
    post = {"slug": "ops", "name": "Ops", "kind": "general", "settings": '{"lexical_weight": 0.4}'}
    response = admin_client.post(reverse("admin:kb_bank_add"), post)
    assert response.status_code == 302, response.content[:2000]
    direct, _ = execute_as(
        Caller.for_staff(admin_user),
        SaveBank,
        None,
        body={
            "slug": "ops2",
            "name": "Ops",
            "kind": "general",
            "settings": {"lexical_weight": 0.4},
        },
    )
    via_admin = Bank.objects.get(slug="ops")
    names = ("name", "kind", "settings")
    assert _fields(via_admin, names) == _fields(direct, names)
    ops_admin, ops_direct = _row_ops(via_admin), _row_ops(direct)
    assert len(ops_admin) == 1
    # the same operation but for the slug each was given
    assert ops_admin[0][2][0][2].pop("slug") == [None, "ops"]
    assert ops_direct[0][2][0][2].pop("slug") == [None, "ops2"]
    assert ops_admin == ops_direct


def test_bank_change_page_records_the_change(admin_client, bank):
    url = reverse("admin:kb_bank_change", args=[bank.pk])
    post = {"slug": "b1", "name": "Renamed", "kind": bank.kind, "settings": "{}"}
    assert admin_client.post(url, post).status_code == 302
    bank.refresh_from_db()
    assert bank.name == "Renamed"
    (op,) = Operation.objects.filter(bank=bank, kind=OperationKind.CONFIGURE)
    assert op.details["rows"] == [
        {"model": "bank", "id": bank.pk, "change": "changed", "fields": {"name": ["B1", "Renamed"]}}
    ]


@pytest.mark.parametrize(
    "post, field",
    [
        ({"slug": "b1", "name": "B1", "kind": "general", "settings": "[1, 2]"}, "settings"),
        ({"slug": "moved", "name": "B1", "kind": "general", "settings": "{}"}, "slug"),
    ],
)
def test_bank_refused_value_shows_on_its_field(admin_client, bank, post, field):
    url = reverse("admin:kb_bank_change", args=[bank.pk])
    response = admin_client.post(url, post)
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    bank.refresh_from_db()
    assert (bank.slug, bank.settings) == ("b1", {})
    assert not Operation.objects.filter(kind=OperationKind.CONFIGURE).exists()


def test_kind_add_page_writes_what_the_action_writes(admin_client, admin_user, bank):
    post = {"bank": str(bank.pk), "name": "runbook", "weight": "2.0", "description": "How-to"}
    assert admin_client.post(reverse("admin:kb_entrykind_add"), post).status_code == 302
    execute_as(
        Caller.for_staff(admin_user),
        SaveEntryKind,
        None,
        body={"bank": "b1", "name": "playbook", "weight": 2.0, "description": "How-to"},
    )
    a = EntryKind.objects.get(bank=bank, name="runbook")
    b = EntryKind.objects.get(bank=bank, name="playbook")
    names = ("weight", "container", "structural", "entity", "description")
    assert _fields(a, names) == _fields(b, names)
    (op_a, op_b) = Operation.objects.filter(bank=bank, kind=OperationKind.CONFIGURE).order_by("pk")
    assert op_a.actor == op_b.actor == f"staff:{admin_user.username}"
    assert op_a.details["rows"][0]["fields"]["name"] == [None, "runbook"]
    assert op_b.details["rows"][0]["fields"]["name"] == [None, "playbook"]


def test_kind_duplicate_name_refused_writes_nothing(admin_client, bank):
    EntryKind.objects.create(bank=bank, name="runbook")
    post = {"bank": str(bank.pk), "name": "runbook", "weight": "1.0"}
    response = admin_client.post(reverse("admin:kb_entrykind_add"), post)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors
    assert EntryKind.objects.filter(bank=bank, name="runbook").count() == 1
    assert not Operation.objects.exists()


@pytest.fixture
def curator_client(client, bank):
    """A staff member who may add and change relation types and kinds, not a superuser."""
    user = User.objects.create_user("curator", password="x", is_staff=True)
    for model in ("edgetype", "entrykind"):
        for verb in ("add", "change", "view"):
            user.user_permissions.add(Permission.objects.get(codename=f"{verb}_{model}"))
    client.force_login(user)
    return client


def test_edge_type_add_page_writes_what_the_action_writes(curator_client, bank):
    post = {
        "bank": str(bank.pk),
        "name": "escalates_to",
        "inverse": "escalated from",
        "neighbor_priority": "5",
        "score_weight": "1.0",
        "phrases": "escalates to",
        "inverse_phrases": "",
    }
    response = curator_client.post(reverse("admin:graph_edgetype_add"), post)
    assert response.status_code == 302, response.content[:3000]
    user = User.objects.get(username="curator")
    execute_as(
        Caller.for_staff(user),
        SaveEdgeType,
        None,
        body={
            "bank": "b1",
            "name": "hands_to",
            "inverse": "escalated from",
            "neighbor_priority": 5,
            "score_weight": 1.0,
            "phrases": ["escalates to"],
        },
    )
    a = EdgeType.objects.get(bank=bank, name="escalates_to")
    b = EdgeType.objects.get(bank=bank, name="hands_to")
    names = ("inverse", "neighbor_priority", "score_weight", "phrases", "inverse_phrases")
    assert _fields(a, names) == _fields(b, names)
    ops = Operation.objects.filter(bank=bank, kind=OperationKind.CONFIGURE).order_by("pk")
    assert [op.actor for op in ops] == ["staff:curator", "staff:curator"]
    fa, fb = (op.details["rows"][0]["fields"] for op in ops)
    assert fa.pop("name") == [None, "escalates_to"] and fb.pop("name") == [None, "hands_to"]
    assert fa == fb


def test_core_edge_type_refused_for_non_superuser(curator_client):
    post = {"bank": "", "name": "outranks", "neighbor_priority": "10", "score_weight": "1.0"}
    response = curator_client.post(reverse("admin:graph_edgetype_add"), post)
    assert response.status_code == 200
    assert "bank" in response.context["adminform"].form.errors
    assert not EdgeType.objects.filter(name="outranks").exists()


def test_edge_type_of_another_bank_is_not_reachable_by_a_token(bank):
    """Tenancy: a token reaches only its banks' vocabulary."""
    from kb.errors import NotFound
    from kb.models import AgentToken

    other = Bank.objects.create(slug="b2", name="B2")
    token = AgentToken.objects.create(name="t", prefix="p1", token_hash="h1", scopes=["curate"])
    token.banks.set([bank])
    caller = Caller.for_token(token, via="rest")
    with pytest.raises(NotFound):
        SaveEdgeType.prepare(caller, None, body={"bank": other.slug, "name": "x"})
    assert not EdgeType.objects.filter(name="x").exists()


def test_delete_page_deletes_an_unused_kind_through_the_action(admin_client, bank):
    kind = EntryKind.objects.create(bank=bank, name="runbook")
    url = reverse("admin:kb_entrykind_delete", args=[kind.pk])
    assert admin_client.post(url, {"post": "yes"}).status_code == 302
    assert not EntryKind.objects.filter(pk=kind.pk).exists()
    (op,) = Operation.objects.filter(bank=bank, kind=OperationKind.CONFIGURE)
    assert op.details["rows"] == [
        {
            "model": "entrykind",
            "id": kind.pk,
            "change": "deleted",
            "fields": {"name": ["runbook", None]},
        }
    ]


def test_delete_action_refuses_a_kind_in_use(admin_user, bank):
    from kb.actions.banks import DeleteEntryKind
    from kb.errors import Conflict
    from kb.services.entries import clean_entry_data, create_entry

    kind = EntryKind.objects.create(bank=bank, name="runbook")
    create_entry(
        bank,
        clean_entry_data(bank, {"title": "T", "kind": "runbook", "lifetime": {"durable": True}}),
    )
    with pytest.raises(Conflict):
        execute_as(Caller.for_staff(admin_user), DeleteEntryKind, None, ids={"id": kind.pk})
    assert EntryKind.objects.filter(pk=kind.pk).exists()
    assert not Operation.objects.filter(kind=OperationKind.CONFIGURE).exists()


def test_create_bank_command_runs_save_bank(db):
    import io

    from django.core.management import call_command

    call_command("create_bank", "ops-cmd", "--name", "Ops", stdout=io.StringIO())
    bank = Bank.objects.get(slug="ops-cmd")
    (op,) = Operation.objects.filter(bank=bank, kind=OperationKind.CONFIGURE)
    assert op.actor == "command:create_bank"
    assert op.details["rows"][0]["fields"]["name"] == [None, "Ops"]
    out = io.StringIO()
    call_command("create_bank", "ops-cmd", stdout=out)  # kept as it is, nothing recorded
    assert "Kept existing" in out.getvalue()
    assert Operation.objects.filter(bank=bank).count() == 1
    with pytest.raises(Exception, match="slug"):
        call_command("create_bank", "Bad Slug", stdout=io.StringIO())
    assert not Bank.objects.filter(name="Bad Slug").exists()


@pytest.mark.parametrize("model", ["kb_claim", "graph_mergeproposal", "graph_edgeproposal"])
def test_queues_and_claims_offer_no_row_delete(admin_client, model):
    """Claims end by release, proposals by a decision: the admin deletes no such row."""
    page = admin_client.get(reverse(f"admin:{model}_changelist"))
    assert page.status_code == 200
    actions = (
        page.context["action_form"].fields["action"].choices
        if page.context.get("action_form")
        else []
    )
    assert "delete_selected" not in [name for name, _ in actions]


def test_edge_type_change_page_records_the_changed_fields(curator_client, bank):
    etype = EdgeType.objects.create(bank=bank, name="escalates_to", inverse="from")
    url = reverse("admin:graph_edgetype_change", args=[etype.pk])
    post = {"name": "escalates_to", "inverse": "escalated from", "neighbor_priority": "10"}
    post |= {"score_weight": "1.0", "phrases": "", "inverse_phrases": ""}
    assert curator_client.post(url, post).status_code == 302
    (op,) = Operation.objects.filter(bank=bank, kind=OperationKind.CONFIGURE)
    assert op.details["rows"][0]["fields"] == {"inverse": ["from", "escalated from"]}
    # the same submission again changes nothing and records nothing
    assert curator_client.post(url, post).status_code == 302
    assert Operation.objects.filter(kind=OperationKind.CONFIGURE).count() == 1
