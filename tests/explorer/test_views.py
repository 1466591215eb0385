"""The explorer's staff views: the page shell (no inline script), the neighbourhood SVG and the
admin redirect; staff only, unknown banks and entries are 404s."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from django.contrib.auth.models import User
from django.test import Client

from graph.edges.links import link

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client):
    User.objects.create_user("curator", password="pw-curator-123", is_staff=True)
    client.login(username="curator", password="pw-curator-123")
    return client


@pytest.fixture
def chain(bank, make_entry):
    """a → b → c → d, plus e → a: depth 1 of a is {b, e}, depth 2 adds c."""
    a, b, c, d, e = (make_entry(f"Entry {x}") for x in "abcde")
    for x, y, note in ((a, b, "Next step."), (b, c, ""), (c, d, "Far."), (e, a, "Context.")):
        link(bank, {"from": x.short_id, "to": y.short_id, "relation": "see_also", "note": note})
    return a, b, c, d, e


def test_page_is_staff_only_and_has_no_inline_script(staff_client, bank):
    assert Client().get("/explorer/acme/").status_code == 302  # anonymous: to the login
    response = staff_client.get("/explorer/acme/")
    assert response.status_code == 200
    html = response.content.decode()
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, flags=re.S)
    # Only the JSON config (data, not code) and the bundle from /static/.
    assert all('type="application/json"' in attrs or not body.strip() for attrs, body in scripts)
    assert any("/static/explorer/explorer.js" in attrs for attrs, _ in scripts)
    assert "cdn" not in html.lower() and "https://" not in html
    config = json.loads(re.search(r'id="kbx-config"[^>]*>(.*?)</script>', html, re.S).group(1))
    assert config["graphUrl"].startswith("/api/v1/banks/acme/graph")
    assert config["queryUrl"] == "/api/v1/banks/acme/query"
    assert staff_client.get("/explorer/nope/").status_code == 404


def test_staff_session_reads_the_graph_api(staff_client, chain):
    data = staff_client.get("/api/v1/banks/acme/graph").json()
    assert len(data["nodes"]) == 5 and len(data["links"]) == 4


def test_neighbourhood_svg_depths(staff_client, chain):
    a, b, c, d, e = chain
    url = f"/explorer/acme/entry/{a.short_id}/neighbourhood.svg"
    assert Client().get(url).status_code == 302
    response = staff_client.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    root = ET.fromstring(response.content)
    ns = "{http://www.w3.org/2000/svg}"
    ids = {g.get("data-id") for g in root.iter(f"{ns}g")}
    assert ids == {a.short_id, b.short_id, c.short_id, e.short_id}
    assert len(list(root.iter(f"{ns}line"))) == 3
    dashed = [x for x in root.iter(f"{ns}line") if x.get("stroke-dasharray")]
    assert len(dashed) == 1  # b → c has no note
    shallow = ET.fromstring(staff_client.get(url + "?depth=1").content)
    assert {g.get("data-id") for g in shallow.iter(f"{ns}g")} == {
        a.short_id, b.short_id, e.short_id,
    }  # fmt: skip
    assert staff_client.get("/explorer/acme/entry/zzzzzzzz/neighbourhood.svg").status_code == 404


def test_entry_admin_redirect_and_change_page_embeds_the_picture(staff_client, chain):
    a = chain[0]
    User.objects.filter(username="curator").update(is_superuser=True)
    response = staff_client.get(f"/explorer/acme/entry/{a.short_id}/admin/")
    assert response.status_code == 302 and response["Location"] == f"/admin/kb/entry/{a.pk}/change/"
    page = staff_client.get(response["Location"]).content.decode()
    assert f"/explorer/acme/entry/{a.short_id}/neighbourhood.svg" in page
    assert f"/explorer/acme/#{a.short_id}" in page


def test_stats_page_links_the_explorer(staff_client, bank):
    User.objects.filter(username="curator").update(is_superuser=True)
    page = staff_client.get("/admin/graph/stats/acme/").content.decode()
    assert 'href="/explorer/acme/"' in page


def test_find_searches_the_whole_bank_ranked(staff_client, bank, other_bank, make_entry):
    make_entry("ADR-0003: move the platform to arm64")
    team = make_entry("Platform team")
    gone = make_entry("Platform retired note")
    gone.status = "deleted"
    gone.save(update_fields=["status"])
    make_entry("Platform x", in_bank=other_bank)
    assert Client().get("/explorer/acme/find.json?q=platform").status_code == 302
    results = staff_client.get("/explorer/acme/find.json?q=platform").json()["results"]
    assert [r["title"] for r in results] == [
        "Platform team",
        "ADR-0003: move the platform to arm64",
    ]
    assert results[0] == {"id": team.short_id, "title": "Platform team", "kind": team.kind.name}
    assert (
        staff_client.get(f"/explorer/acme/find.json?q={team.short_id}").json()["results"][0]["id"]
        == team.short_id
    )
    assert staff_client.get("/explorer/acme/find.json?q=").json() == {"results": []}
    assert staff_client.get("/explorer/nope/find.json?q=x").status_code == 404
