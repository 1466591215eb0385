"""Template tags of the graph admin pages."""

from urllib.parse import urlencode

from django import template

from graph.admin.banks import bank_overview as _bank_overview
from kb.banks_directory import bank_page

register = template.Library()


@register.simple_tag(takes_context=True)
def bank_overview(context):
    """One page of banks (``?bank_q=`` searches slug and name, ``?bank_page=`` pages) with
    their counts and page links (admin home)."""
    request = context["request"]
    query = request.GET.get("bank_q", "")
    result = bank_page(query, request.GET.get("bank_page"))
    return {
        "rows": _bank_overview(result.banks),
        "page": result.page,
        "total": result.total,
        "query": result.query,
        "page_query": urlencode({"bank_q": result.query}) + "&" if result.query else "",
    }
