"""Banks: creating them idempotently."""

from __future__ import annotations

import re

from kb.errors import InvalidInput
from kb.models import Bank, BankKind

SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


def ensure_bank(
    slug: str, *, name: str | None = None, kind: str = BankKind.GENERAL
) -> tuple[Bank, bool]:
    """The bank ``slug``, created if missing (an existing bank is left as it is)."""
    if not SLUG.match(slug or ""):
        raise InvalidInput(
            f"Bank slug {slug!r} must be lowercase letters, digits and '-' (at most 64).",
            code="invalid_slug",
        )
    if kind not in BankKind.values:
        raise InvalidInput(
            f"Bank kind must be one of {', '.join(BankKind.values)}.", code="invalid_bank_kind"
        )
    return Bank.objects.get_or_create(
        slug=slug, defaults={"name": name or slug.replace("-", " ").title(), "kind": kind}
    )
