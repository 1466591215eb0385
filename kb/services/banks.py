"""Banks: creating them idempotently, archiving and restoring them."""

from __future__ import annotations

import re

from django.utils import timezone

from kb import audit
from kb.errors import InvalidInput
from kb.models import Bank, BankKind, Operation, OperationKind
from kb.unit_of_work import unit_of_work

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


def set_archived(
    bank: Bank, archived: bool, *, reason: str = "", actor: str | None = None
) -> Operation | None:
    """Archive (or restore) ``bank`` as one audited operation. Archiving keeps every row and
    every token working; it takes the bank out of the bank lists, switchers and filters so a
    site with hundreds of banks lists the ones in use. Archiving an archived bank (or
    restoring a live one) changes nothing and answers ``None``."""
    if (bank.archived_at is not None) == archived:
        return None
    kind = OperationKind.ARCHIVE if archived else OperationKind.UNARCHIVE
    default = f"{'archived' if archived else 'restored'} bank {bank.slug}"
    with unit_of_work(bank, kind, reason=reason or default, actor=actor) as op:
        bank.archived_at = timezone.now() if archived else None
        bank.save(update_fields=["archived_at"])
        audit.record(op, archived=archived)
    return op
