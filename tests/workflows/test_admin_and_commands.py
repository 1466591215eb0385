"""The read-only admin of reports and findings, and the gap_report command."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from workflows.models import Finding, GapReport, PendingRegeneration
from workflows.services.reports import build_report

pytestmark = pytest.mark.django_db


@pytest.fixture
def reported(flow):
    f = flow("Order to cash")
    f.chain(f.step("Receive", start=True), f.step("Ship", owner=None))
    build_report(f.bank, f.process)
    return f


@pytest.mark.parametrize("model", [GapReport, Finding, PendingRegeneration])
def test_admin_pages_render_and_are_read_only(admin_client, reported, model):
    url = reverse(f"admin:workflows_{model._meta.model_name}_changelist")
    assert admin_client.get(url).status_code == 200
    assert (
        admin_client.get(reverse(f"admin:workflows_{model._meta.model_name}_add")).status_code
        == 403
    )


def test_finding_admin_shows_history_and_links_to_the_page(admin_client, reported):
    finding = Finding.objects.get(rule="dead_end")
    page = admin_client.get(reverse("admin:workflows_finding_change", args=[finding.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "detected" in html
    changelist = admin_client.get(reverse("admin:workflows_finding_changelist")).content.decode()
    assert f"/workflows/acme/{reported.process.short_id}/#finding-{finding.pk}" in changelist


def test_gap_report_command(reported, bank):
    out = io.StringIO()
    call_command("gap_report", bank.slug, "--show", stdout=out)
    text = out.getvalue()
    assert f"{reported.process.short_id} Order to cash: 2 findings" in text
    assert "[open] dead_end: Step 'Ship' has no successor" in text
    assert text.strip().endswith(
        "1 processes reported: 2 findings, 0 new, 0 closed since the previous reports."
    )
    assert GapReport.objects.count() == 2
    with pytest.raises(CommandError):
        call_command("gap_report", "nope", stdout=io.StringIO())
    with pytest.raises(CommandError):
        call_command("gap_report", bank.slug, "--process", "deadbeef", stdout=io.StringIO())
