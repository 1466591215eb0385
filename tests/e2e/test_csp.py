"""Every HTML page works under the Content-Security-Policy in real headless Chromium: the
admin (each registered model's list and add page, an entry and an operation), the graph stats
page, the workflow manager pages and the API docs raise no CSP violation in the console."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.db import connections
from django.urls import reverse

from kb.models import Bank, Entry, Operation
from kb.services.bulk import import_bank
from workflows.services.subgraph import find_process

from .test_workflow_report import CHROMIUM, CHROMIUM_ARGS

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
DEMO = Path(__file__).resolve().parents[2] / "kb" / "demo" / "business.jsonl"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

# Records every violation the page reports, from before any of its own scripts run.
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', e => window.__csp.push(
  e.violatedDirective + ' ' + (e.blockedURI || 'inline') + ' ' + (e.sourceFile || '') + ':' +
  (e.lineNumber || '')));
"""


def admin_pages(bank: Bank, process_id: str) -> list[str]:
    pages = ["/admin/"]
    for model, model_admin in admin.site._registry.items():
        meta = model._meta
        pages.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
        if model_admin.has_add_permission(_superuser_request()):
            pages.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_add"))
    entry = Entry.objects.filter(bank=bank).first()
    op = Operation.objects.filter(bank=bank).first()
    pages += [
        reverse("admin:kb_entry_change", args=[entry.pk]),
        reverse("admin:kb_operation_change", args=[op.pk]),
        f"/admin/graph/stats/{bank.slug}/",
        "/workflows/",
        f"/workflows/{bank.slug}/",
        f"/workflows/{bank.slug}/{process_id}/",
        "/api/v1/docs/",
    ]
    return pages


def _superuser_request():
    class Request:
        user = User.objects.get(username="root")

    return Request()


def test_pages_raise_no_csp_violations(live_server, hashing_embedder):
    from playwright.sync_api import sync_playwright

    bank = Bank.objects.create(slug="biz", name="Larkspur Freight business", kind="business")
    import_bank(bank, DEMO.read_text(encoding="utf-8"), reason="demo data")
    process = find_process(bank, "process:order-to-cash")
    User.objects.create_superuser("root", password="pw-root-123")
    pages = admin_pages(bank, process.short_id)
    violations: dict[str, list[str]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page()
            page.add_init_script(RECORD_VIOLATIONS)
            console: list[str] = []
            page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
            page.goto(f"{live_server.url}/admin/login/")
            page.fill("#id_username", "root")
            page.fill("#id_password", "pw-root-123")
            page.click("input[type=submit]")
            page.wait_for_url(f"{live_server.url}/admin/")
            for path in pages:
                console.clear()
                response = page.goto(f"{live_server.url}{path}")
                assert response.status == 200, path
                assert "content-security-policy" in response.headers, path
                page.wait_for_load_state("load")
                found = page.evaluate("() => window.__csp") + [
                    line for line in console if "Content Security Policy" in line
                ]
                if found:
                    violations[path] = found
            # The detector works: an inline script without the nonce is blocked and reported.
            page.goto(f"{live_server.url}/admin/")
            with contextlib.suppress(Exception):
                page.add_script_tag(content="window.__inline = 1")
            assert page.evaluate("() => window.__inline") is None
            assert page.evaluate("() => window.__csp"), "the blocked inline script went unseen"
            # The docs page really ran its (external) script: Swagger UI drew the operations.
            page.goto(f"{live_server.url}/api/v1/docs/")
            page.wait_for_selector(".opblock", timeout=30_000)
        finally:
            browser.close()
            connections.close_all()
    assert len(pages) > 20
    assert not violations, violations
