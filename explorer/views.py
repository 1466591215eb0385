"""Staff views of the graph explorer. Thin: the page is a shell whose script reads the REST API
(session auth: graph data, the fold query, entries); the neighbourhood picture is drawn by a
graph service."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from graph.admin.entries import ranked_matches
from graph.analytics.layout_store import HIDDEN_STATUSES, sync_max
from graph.analytics.neighbourhood import neighbourhood_svg as draw_neighbourhood
from graph.analytics.overview import drawable_count, overview_min
from graph.models import GraphLayout
from kb.errors import KbError
from kb.models import Bank, Entry
from kb.services.entries import find_entry


def _bank(slug: str) -> Bank:
    bank = Bank.objects.filter(slug=slug).first()
    if bank is None:
        raise Http404(f"No bank {slug!r}.")
    return bank


@require_GET
@staff_member_required
def explorer_page(request, bank: str):
    """The whole bank as constellations; a query lights the answer as the agent reads it."""
    bank_obj = _bank(bank)
    count = drawable_count(bank_obj)
    laid_out = GraphLayout.objects.filter(bank=bank_obj, computed_at__isnull=False).exists()
    config = {
        "bank": bank_obj.slug,
        "graphBase": reverse("bank-graph", args=[bank_obj.slug]),
        "graphUrl": reverse("bank-graph", args=[bank_obj.slug]) + "?include_backfill=true",
        # Too large to draw whole (or too large to lay out in a request, with no layout yet):
        # the page opens on the community overview and lays out each drill-down on request.
        "large": count > overview_min() or (count > sync_max() and not laid_out),
        "entryCount": count,
        "overviewMin": overview_min(),
        "queryUrl": f"/api/v1/banks/{bank_obj.slug}/query",
        "entryUrl": f"/api/v1/banks/{bank_obj.slug}/entries/__ID__",
        "adminUrl": reverse("explorer:entry-admin", args=[bank_obj.slug, "__ID__"]),
        "neighbourhoodUrl": reverse("explorer:neighbourhood", args=[bank_obj.slug, "__ID__"]),
        "findUrl": reverse("explorer:find", args=[bank_obj.slug]),
    }
    return render(
        request,
        "explorer/explorer.html",
        {
            **admin.site.each_context(request),
            "title": f"Graph explorer — {bank_obj.name}",
            "bank": bank_obj,
            "explorer_config": config,
        },
    )


@require_GET
@staff_member_required
def neighbourhood_svg(request, bank: str, entry_id: str):
    """An entry's current edges to depth 1 or 2 (``?depth=``), drawn as SVG."""
    bank_obj = _bank(bank)
    depth = 2 if request.GET.get("depth", "2") != "1" else 1
    try:
        entry = find_entry(bank_obj, entry_id)
    except KbError:
        raise Http404(f"No entry {entry_id!r} in bank {bank!r}.") from None
    response = HttpResponse(draw_neighbourhood(entry, depth=depth), content_type="image/svg+xml")
    response["Cache-Control"] = "private, max-age=30"
    return response


@require_GET
@staff_member_required
def entry_admin(request, bank: str, entry_id: str):
    """Redirect from an entry's public id to its admin change page."""
    bank_obj = _bank(bank)
    try:
        entry = find_entry(bank_obj, entry_id)
    except KbError:
        raise Http404(f"No entry {entry_id!r} in bank {bank!r}.") from None
    return redirect(reverse("admin:kb_entry_change", args=[entry.pk]))


FIND_LIMIT = 12


@require_GET
@staff_member_required
def find_entries(request, bank: str):
    """ "Find an entry" over the whole bank, not only what is drawn: ``?q=`` ranked as the
    admin's pickers rank (exact title, alias, id or key; then prefixes; then every word),
    merged and deleted entries left out. ``{"results": [{"id", "title", "kind"}]}``."""
    bank_obj = _bank(bank)
    term = (request.GET.get("q") or "").strip()[:200]
    if not term or "\x00" in term:
        return JsonResponse({"results": []})
    entries = Entry.objects.filter(bank=bank_obj).exclude(status__in=HIDDEN_STATUSES)
    rows = ranked_matches(entries, term).values_list("short_id", "title", "kind__name")
    results = [{"id": i, "title": t, "kind": k} for i, t, k in rows[:FIND_LIMIT]]
    return JsonResponse({"results": results})
