"""The bank switcher: one search box (with suggestions) instead of a link per bank."""

from django import template

from kb.banks_directory import DESTINATIONS, switcher_suggestions

register = template.Library()


@register.inclusion_tag("kb/bank_switcher.html")
def bank_switcher(to: str = "explorer", current=None, label: str = "Bank"):
    """A form that jumps to ``to`` (a key of ``DESTINATIONS``) for the bank typed."""
    return {
        "to": to if to in DESTINATIONS else "explorer",
        "current": current,
        "label": label,
        "suggestions": switcher_suggestions(),
        "list_id": f"kb-banks-{to}",
    }
