"""Manager pages: who may see them, what they show, and the actions they offer."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from workflows.models import Finding, FindingEvent, GapReport
from workflows.services.reports import build_report

pytestmark = pytest.mark.django_db


@pytest.fixture
def holey(flow):
    f = flow("Order to cash")
    start = f.step("Receive order", start=True)
    ok = f.decision("Credit ok?")
    ship = f.step("=HYPERLINK(1) Ship goods", owner=None)
    f.chain(start, ok, ship)
    f.link(ship, f.artifact("Signed rate agreement"), "requires")
    f.ship = ship
    return f


def urls(f):
    base = f"/workflows/{f.bank.slug}/{f.process.short_id}/"
    finding = Finding.objects.filter(process=f.process).first()
    return {
        "overview": "/workflows/",
        "bank": f"/workflows/{f.bank.slug}/",
        "process": base,
        "csv": base + "findings.csv",
        "regenerate": base + "regenerate",
        "action": base + f"findings/{finding.pk}" if finding else None,
    }


@pytest.fixture
def manager_client(manager):
    client = Client()
    client.force_login(manager)
    return client


def test_anonymous_users_are_sent_to_the_login(holey, client):
    build_report(holey.bank, holey.process)
    for name, url in urls(holey).items():
        response = client.get(url) if name not in ("regenerate", "action") else client.post(url)
        assert response.status_code == 302, name
        assert response["Location"].startswith("/admin/login/?next=")


def test_staff_who_are_not_managers_get_403(holey, plain_staff):
    build_report(holey.bank, holey.process)
    client = Client()
    client.force_login(plain_staff)
    for name, url in urls(holey).items():
        if name in ("regenerate", "action"):
            response = client.post(url, {"action": "acknowledge"})
        else:
            response = client.get(url)
        assert response.status_code == 403, name
    assert Finding.objects.filter(status="open").count() == Finding.objects.count()
    assert GapReport.objects.count() == 1


def test_a_viewer_without_change_permission_sees_but_cannot_act(holey):
    from django.contrib.auth.models import Permission

    viewer = User.objects.create_user("vic", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_gap_reports"))
    client = Client()
    client.force_login(viewer)
    page = client.get(urls(holey)["process"])
    assert page.status_code == 200 and b'value="acknowledge"' not in page.content
    response = client.post(urls(holey)["action"], {"action": "acknowledge"})
    assert response.status_code == 403


def test_superusers_pass(holey, admin_client):
    assert admin_client.get(urls(holey)["bank"]).status_code == 200
    assert admin_client.get(urls(holey)["process"]).status_code == 200


def test_overview_lists_processes_with_open_counts_and_trend(holey, healthy, manager_client):
    build_report(holey.bank, holey.process)
    holey.own(holey.ship, "Warehouse")
    build_report(holey.bank, holey.process)
    page = manager_client.get("/workflows/")
    assert page.status_code == 200
    html = page.content.decode()
    row = re.search(rf'<tr data-process="{holey.process.short_id}">(.*?)</tr>', html, re.S).group(1)
    assert "Order to cash" in row
    assert '<span class="pill status-open">3</span>' in row  # dead end, one branch, unproduced
    assert "4 → 3" in row and "<svg" in row  # the trend, oldest first
    assert f'<tr data-process="{healthy.process.short_id}">' in html  # built on first view
    assert manager_client.get("/workflows/nope/").status_code == 404


def test_process_page_draws_the_flow_offline_and_links_holes(holey, manager_client):
    page = manager_client.get(urls(holey)["process"])
    assert page.status_code == 200
    html = page.content.decode()
    assert "<svg" in html and "</svg>" in html
    # One script, a same-origin static file (pan and zoom, confirmations); nothing inline and
    # nothing from another host: the page works offline.
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, flags=re.S)
    assert scripts == [(' src="/static/workflows/report.js" defer', "")]
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html
    for finding in Finding.objects.filter(process=holey.process).exclude(
        entries=[holey.process.short_id]
    ):
        assert f'id="finding-{finding.pk}"' in html
    ship_finding = Finding.objects.filter(entries=[holey.ship.short_id]).order_by("pk").first()
    # The ship step's node (laid out by Graphviz) links to its first finding.
    node = re.search(rf'<g id="node-{holey.ship.short_id}"[^>]*>(.*?)</g>\s*</g>', html, re.S)
    assert node and f'href="#finding-{ship_finding.pk}"' in node.group(1)
    assert "? missing branch" in html and "✕ stops" in html and "no owner" in html
    assert 'name="csrfmiddlewaretoken"' in html


def test_filters_narrow_the_table(holey, manager_client):
    url = urls(holey)["process"]
    html = manager_client.get(url, {"rule": "dead_end"}).content.decode()
    assert html.count('data-finding="') == 1
    dead = Finding.objects.get(rule="dead_end")
    assert f'data-finding="{dead.pk}"' in html
    html = manager_client.get(url, {"status": "acknowledged"}).content.decode()
    assert html.count('data-finding="') == 0 and "No finding matches these filters." in html
    html = manager_client.get(url, {"rule": "bogus", "status": "x"}).content.decode()
    assert html.count('data-finding="') == 4


def test_actions_change_status_assign_and_comment_with_csrf(holey, manager):
    build_report(holey.bank, holey.process)
    client = Client(enforce_csrf_checks=True)
    client.force_login(manager)
    finding = Finding.objects.get(rule="dead_end")
    url = urls(holey)["process"] + f"findings/{finding.pk}"
    assert client.post(url, {"action": "acknowledge"}).status_code == 403  # no CSRF token
    page = client.get(urls(holey)["process"], {"rule": "dead_end"})
    token = page.cookies["csrftoken"].value
    response = client.post(
        url,
        {
            "action": "acknowledge",
            "comment": "Billing will add the step.",
            "next": "/workflows/acme/x/?rule=dead_end",
            "csrfmiddlewaretoken": token,
        },
    )
    assert response.status_code == 302
    assert response["Location"] == f"/workflows/acme/x/?rule=dead_end#finding-{finding.pk}"
    finding.refresh_from_db()
    assert finding.status == "acknowledged" and finding.comment == "Billing will add the step."
    event = FindingEvent.objects.filter(finding=finding).latest("id")
    assert (event.actor, event.kind, event.to_status) == ("staff:maria", "status", "acknowledged")
    response = client.post(
        url,
        {
            "action": "assign",
            "assignee": "maria",
            "csrfmiddlewaretoken": token,
            "next": "https://evil.example/",
        },
    )
    assert response["Location"].startswith(urls(holey)["process"])
    finding.refresh_from_db()
    assert finding.assignee == manager
    # A refused action explains itself and changes nothing.
    response = client.post(
        url, {"action": "acknowledge", "csrfmiddlewaretoken": token}, follow=True
    )
    assert "already acknowledged" in response.content.decode()
    # Accepting the risk asks why first; with a reason it closes, and the drawing stops
    # showing the entry as a hole.
    refused = client.post(url, {"action": "accept", "csrfmiddlewaretoken": token}, follow=True)
    assert "say why in the comment box" in refused.content.decode()
    finding.refresh_from_db()
    assert finding.status == "acknowledged"
    client.post(
        url,
        {"action": "accept", "comment": "Ships are counted by hand.", "csrfmiddlewaretoken": token},
    )
    finding.refresh_from_db()
    assert finding.status == "accepted"
    page = client.get(urls(holey)["process"]).content.decode()
    assert f'href="#finding-{finding.pk}"' not in page.split('<h2 id="findings"')[0]
    assert (
        client.post(
            urls(holey)["process"] + "findings/999999",
            {"action": "accept", "csrfmiddlewaretoken": token},
        ).status_code
        == 404
    )


def test_regenerate_button(holey, manager_client):
    manager_client.get(urls(holey)["process"])
    holey.own(holey.ship, "Warehouse")
    response = manager_client.post(urls(holey)["regenerate"], follow=True)
    assert response.status_code == 200
    assert "Report regenerated: 3 findings, 0 new, 1 closed" in response.content.decode()
    assert GapReport.objects.filter(process=holey.process).count() == 2
    assert manager_client.get(urls(holey)["regenerate"]).status_code == 405


def test_csv_export(holey, manager_client):
    response = manager_client.get(urls(holey)["csv"])
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert f"{holey.process.short_id}-gaps.csv" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert {r["rule"] for r in rows} == {
        "dead_end",
        "single_branch_decision",
        "unowned_step",
        "unproduced_requirement",
    }
    dead = next(r for r in rows if r["rule"] == "dead_end")
    assert dead["status"] == "open" and dead["entries"] == holey.ship.short_id
    assert dead["entry_titles"] == "'=HYPERLINK(1) Ship goods"  # no formula injection
    assert dead["message"].startswith("Step '=HYPERLINK(1) Ship goods' has no successor")
    only = manager_client.get(urls(holey)["csv"], {"rule": "unowned_step"})
    assert len(list(csv.DictReader(io.StringIO(only.content.decode())))) == 1
