"""The curator's admin in headless Chromium: home with the banks, an entry's page with its
edges and unlink buttons, its history timeline, the delete-with-bridging page and the merge
preview. Screenshots: /tmp/admin-*.png."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from graph.edges.links import link
from graph.resolution.aliases import add_alias
from kb.models import Bank
from kb.services.entries import clean_entry_data, create_entry, update_entry
from tests.e2e.test_workflow_report import browser_page  # noqa: F401  (fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def _entry(bank, title, summary=""):
    data = {
        "title": title,
        "summary": summary,
        "content": f"{title}.",
        "lifetime": {"durable": True},
    }
    return create_entry(bank, clean_entry_data(bank, data))


def test_curator_pages_in_chromium(live_server, browser_page, hashing_embedder):  # noqa: F811
    bank = Bank.objects.create(slug="eng", name="Engineering", kind="engineering")
    platform = _entry(bank, "Platform team", "Owns the deploy pipeline")
    deploy = _entry(bank, "Deploy pipeline", "How code reaches production")
    old = _entry(bank, "Old deploy notes", "The 2023 write-up")
    runbook = _entry(bank, "Rollback runbook")
    link(bank, {"from": deploy.short_id, "to": platform.short_id, "relation": "owned_by"})
    link(bank, {"from": old.short_id, "to": platform.short_id, "relation": "owned_by"})
    link(
        bank,
        {
            "from": runbook.short_id,
            "to": deploy.short_id,
            "relation": "cites",
            "note": "Read it before rolling back.",
        },
    )
    add_alias(bank, deploy, "the pipeline")
    update_entry(bank, deploy, {"summary": "How code reaches production, step by step"})
    User.objects.create_superuser("root", password="pw-root-123")

    page = browser_page
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "pw-root-123")
    page.click("input[type=submit]")
    page.wait_for_selector("#bank-overview")
    row = page.locator("#bank-overview tr", has_text="eng")
    assert "Stats" in row.inner_text() and "Explorer" in row.inner_text()
    page.screenshot(path="/tmp/admin-home.png", full_page=True)

    page.goto(f"{live_server.url}/admin/kb/entry/{deploy.pk}/change/")
    page.wait_for_selector("#edges_out-group")
    assert page.locator("a.button", has_text="Unlink…").count() == 2  # one out, one in
    assert "Platform team" in page.locator("#edges_out-group").inner_text()
    page.screenshot(path="/tmp/admin-entry.png", full_page=True)

    page.goto(f"{live_server.url}/admin/kb/entry/{deploy.pk}/history/")
    page.wait_for_selector("ul.timeline")
    text = page.locator("ul.timeline").inner_text()
    assert "Added alias “the pipeline”" in text and "edited summary" in text
    assert "None" not in text
    page.screenshot(path="/tmp/admin-history.png", full_page=True)

    page.goto(f"{live_server.url}/admin/kb/entry/{deploy.pk}/delete/")
    page.wait_for_selector("table.bridge-plan")
    assert "“Rollback runbook” —see_also→ “Platform team”" in page.inner_text("table.bridge-plan")
    page.screenshot(path="/tmp/admin-delete.png", full_page=True)

    page.goto(f"{live_server.url}/admin/kb/entry/")
    page.check(f"input[name=_selected_action][value='{deploy.pk}']")
    page.check(f"input[name=_selected_action][value='{old.pk}']")
    page.select_option("select[name=action]", "merge_selected")
    page.click("button[name=index]")
    page.wait_for_selector("table.merge-preview")
    assert "collapses into existing edge" in page.inner_text("table.merge-preview")
    page.screenshot(path="/tmp/admin-merge.png", full_page=True)
    assert errors == []
