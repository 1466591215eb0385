"""End to end in headless Chromium: a manager logs in, opens a gap report, acknowledges a
finding, reloads and sees it persisted. Screenshot: /tmp/workflow-report.png."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.db import connections

from kb.models import Bank
from kb.services.bulk import import_bank
from workflows.models import Finding, FindingEvent, GapReport
from workflows.services.subgraph import find_process

# Playwright's sync API runs an event loop in this thread; the test's own ORM calls are safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DEMO = Path(__file__).resolve().parents[2] / "kb" / "demo" / "business.jsonl"
SCREENSHOT = Path("/tmp/workflow-report.png")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


@pytest.fixture
def browser_page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        try:
            yield page
        finally:
            browser.close()
            # Inside Playwright's loop the ORM used connections of their own context: close
            # them, or they would hold the test database open at teardown.
            connections.close_all()


def test_manager_acknowledges_a_finding(live_server, browser_page, hashing_embedder):
    bank = Bank.objects.create(slug="biz", name="Larkspur Freight business", kind="business")
    import_bank(bank, DEMO.read_text(encoding="utf-8"), reason="demo data")
    process = find_process(bank, "process:offboarding")
    # The import committed edits to the process: the debounced task already built a report.
    assert GapReport.objects.filter(process=process, trigger="edit").count() == 1
    manager = User.objects.create_user("maria", password="pw-maria-123", is_staff=True)
    manager.groups.add(Group.objects.get(name="managers"))

    page = browser_page
    page.goto(f"{live_server.url}/admin/login/?next=/workflows/")
    page.fill("#id_username", "maria")
    page.fill("#id_password", "pw-maria-123")
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/workflows/")
    row = page.locator(f'tr[data-process="{process.short_id}"]')
    assert "Employee offboarding" in row.inner_text()
    row.locator("a", has_text="Employee offboarding").click()
    page.wait_for_selector("svg.flow")

    dead = Finding.objects.get(process=process, rule="dead_end")
    finding_row = page.locator(f"#finding-{dead.pk}")
    assert "has no successor and is not marked terminal" in finding_row.inner_text()
    # The hole in the diagram links to its finding.
    node = page.locator(f'svg.flow a[href="#finding-{dead.pk}"]')
    assert node.count() == 1
    finding_row.locator("textarea[name=comment]").fill("IT will hand over to payroll.")
    finding_row.locator("button[value=acknowledge]").click()
    page.wait_for_load_state()
    page.reload()
    finding_row = page.locator(f"#finding-{dead.pk}")
    assert finding_row.get_attribute("data-status") == "acknowledged"
    assert "IT will hand over to payroll." in finding_row.inner_text()

    dead.refresh_from_db()
    assert dead.status == "acknowledged" and dead.comment == "IT will hand over to payroll."
    event = FindingEvent.objects.filter(finding=dead).latest("id")
    assert (event.kind, event.actor, event.to_status) == ("status", "staff:maria", "acknowledged")
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert SCREENSHOT.stat().st_size > 20_000


def test_order_to_cash_page_renders_its_holes(live_server, browser_page, hashing_embedder):
    bank = Bank.objects.create(slug="biz", name="Larkspur Freight business", kind="business")
    import_bank(bank, DEMO.read_text(encoding="utf-8"), reason="demo data")
    process = find_process(bank, "process:order-to-cash")
    User.objects.create_superuser("root", password="pw-root-123")
    page = browser_page
    page.goto(f"{live_server.url}/admin/login/?next=/workflows/biz/{process.short_id}/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "pw-root-123")
    page.click("input[type=submit]")
    page.wait_for_selector("svg.flow")
    holes = page.locator("svg.flow a.hole")
    assert holes.count() == 3  # the one-branch decision, the unowned step, the lost agreement
    assert page.locator("tr[data-finding]").count() == 3
    # Clicking a hole in the drawing lands on its finding.
    holes.first.click()
    assert "#finding-" in page.url
    page.screenshot(path="/tmp/workflow-o2c.png", full_page=True)
