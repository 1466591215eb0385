"""Template tags of the graph admin pages."""

from django import template

from graph.admin.banks import bank_overview as _bank_overview

register = template.Library()


@register.simple_tag
def bank_overview():
    """Every bank with its counts and page links (admin home)."""
    return _bank_overview()
