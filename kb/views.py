"""The landing page at ``/`` and the bank switcher's jump (``/banks/go/``)."""

from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_GET

from kb.banks_directory import DESTINATIONS, bank_page, search_banks
from kb.models import Bank


def home(request):
    """Links to the admin, the API docs and the workflow pages; staff also get the bank
    switcher to the explorers (bank names are not shown to anonymous visitors)."""
    return render(request, "home.html", {"bank_count": Bank.objects.count()})


FAVICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
    '<rect width="16" height="16" rx="3" fill="#264b5d"/>'
    '<circle cx="5" cy="5" r="2" fill="#fff"/><circle cx="11" cy="11" r="2" fill="#fff"/>'
    '<path d="M5 5L11 11" stroke="#fff" stroke-width="1.5"/></svg>'
)


@require_GET
def favicon(request):
    """The site icon (browsers ask every page for ``/favicon.ico``)."""
    response = HttpResponse(FAVICON, content_type="image/svg+xml")
    response["Cache-Control"] = "public, max-age=86400"
    return response


def switch_url(bank: Bank, to: str) -> str:
    name = DESTINATIONS.get(to, DESTINATIONS["explorer"])
    if name == "admin:kb_entry_changelist":
        return f"{reverse(name)}?bank__id__exact={bank.pk}"
    if name == "admin:index":
        return f"{reverse(name)}?bank_q={bank.slug}"
    try:
        return reverse(name, args=[bank.slug])
    except NoReverseMatch:  # a destination whose app is not installed
        return reverse("admin:index") + f"?bank_q={bank.slug}"


@require_GET
@staff_member_required
def bank_switch(request):
    """Go to ``to`` for the bank typed in ``q``: straight there when one bank is the answer
    (exact slug or the only match), else a paged list of the matches."""
    query = (request.GET.get("q") or "").strip()
    to = request.GET.get("to") if request.GET.get("to") in DESTINATIONS else "explorer"
    if query:
        exact = Bank.objects.filter(slug__iexact=query).first()
        matches = list(search_banks(query)[:2]) if exact is None else [exact]
        if len(matches) == 1:
            return HttpResponseRedirect(switch_url(matches[0], to))
    result = bank_page(query, request.GET.get("page"))
    for bank in result.page.object_list:
        bank.switch_url = switch_url(bank, to)
    return render(
        request,
        "kb/bank_search.html",
        {
            **admin.site.each_context(request),
            "title": "Find a bank",
            "result": result,
            "to": to,
            "page_query": urlencode({"q": query, "to": to}) + "&",
        },
    )
