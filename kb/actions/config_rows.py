"""Configuration rows as actions: a bank's own row and its vocabularies (entry kinds, and in
the graph app relation types), created or changed as one audited operation.

A configuration row is declared once, by a DRF ``ModelSerializer`` (:attr:`SaveConfigRow.Input`)
that really validates (lengths, choices, the per-bank uniqueness); the admin's add and change
pages build their body from the form and call the action, so a refused value comes back as a
field error and nothing is written. A row of a bank is written inside
:func:`kb.unit_of_work.unit_of_work` on that bank: one ``configure`` operation naming the model,
the row and the changed fields (before, after). A core row (no bank: shared vocabulary) has no
bank to hold an operation: only a superuser (or a command) writes it, and the log line records it.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, ClassVar

from django.db import IntegrityError, transaction
from rest_framework import serializers

from kb.actions.base import Action, Caller
from kb.errors import Conflict, Forbidden, InvalidInput, NotFound
from kb.models import Bank, Operation, OperationKind, Scope
from kb.unit_of_work import unit_of_work

logger = logging.getLogger("kb.config")


def jsonable(value: Any) -> Any:
    """A field value as an operation's details store it."""
    if isinstance(value, Bank):
        return value.slug
    if isinstance(value, bool | int | float | str | dict | list) or value is None:
        return value
    return str(value)


def serializer_errors(exc: serializers.ValidationError) -> InvalidInput:
    """A serializer's refusal as the ``KbError`` every page and transport shows."""
    detail = exc.detail if isinstance(exc.detail, dict) else {"input": exc.detail}
    fields = {
        name: " ".join(map(str, v)) if isinstance(v, list) else str(v) for name, v in detail.items()
    }
    message = "; ".join(f"{name}: {text}" for name, text in fields.items())
    return InvalidInput(message or "Some fields are invalid.", fields=fields)


def reach_row_bank(caller: Caller, slug, scope: str, field: str = "bank") -> Bank | None:
    """The bank ``slug`` a configuration row belongs to, as ``caller`` may reach it (404 for
    a bank not theirs); None for a core row, which needs a superuser or a system caller."""
    if slug is None:
        user = caller.user
        if not (getattr(user, "is_superuser", False) or caller.via in ("job", "command")):
            raise Forbidden(
                "Only superusers add, change or delete core (bank-less) vocabulary.",
                code="core_vocabulary",
                fields={field: "Choose a bank; core rows are for superusers."},
            )
        return None
    if not isinstance(slug, str):
        raise InvalidInput("Name the bank by its slug.", fields={field: "A slug."})
    return caller.bank(slug, scope)


@contextlib.contextmanager
def config_unit(bank: Bank | None, reason: str):
    """The ``configure`` operation on the row's bank, or (core row) a plain transaction."""
    if bank is None:
        with transaction.atomic():
            yield None
        return
    with unit_of_work(bank, OperationKind.CONFIGURE, reason=reason) as op:
        yield op


def record_row(op: Operation, pk: int, label: str, verb: str, changed: dict) -> None:
    """Name the row and its changed fields (before, after) on the operation."""
    details = dict(op.details or {})
    details.setdefault("rows", []).append(
        {"model": label, "id": pk, "change": verb, "fields": changed}
    )
    op.details = details
    op.save(update_fields=["details"])


class SaveConfigRow(Action):
    """Create (no ``id``) or change (``ids={"id": pk}``) one configuration row.

    Runs without a bank from the caller's side (``bank=None``): the row names its bank (or
    none, a core row), and the caller must reach that bank with the ``curate`` scope; core rows
    need a superuser or a system caller (command, job)."""

    scope = Scope.CURATE
    model: ClassVar[type]
    # The field naming the row's bank (None: the row is a bank).
    bank_field: ClassVar[str | None] = "bank"
    path_ids = {"id": "id"}

    @classmethod
    def prepare(cls, caller: Caller, bank=None, *, ids=None, query=None, body=None) -> Action:
        """Check the body against :attr:`Input` (the row being changed, if ``id``), the
        caller's reach to the row's bank, and nothing written."""
        from kb.api.params import unknown_fields

        body = dict(body or {})
        pk = (ids or {}).get("id")
        instance = None
        if pk is not None:
            instance = cls.model._default_manager.filter(pk=pk).first()
            if instance is None:
                raise NotFound(f"No {cls.model._meta.verbose_name} {pk}.", code="not_found")
        unknown = unknown_fields(cls.Input(), body)
        if unknown:
            raise InvalidInput(
                f"Unknown fields: {', '.join(unknown)}.",
                fields=dict.fromkeys(unknown, "Unknown field."),
            )
        row_bank = cls._row_bank(caller, instance, body)
        serializer = cls.Input(instance, data=body, partial=instance is not None)
        try:
            serializer.is_valid(raise_exception=True)
        except serializers.ValidationError as exc:
            raise serializer_errors(exc) from None
        action = cls(row_bank, caller, ids=dict(ids or {}), data=dict(serializer.validated_data))
        action.instance, action.serializer = instance, serializer
        return action

    @classmethod
    def _row_bank(cls, caller: Caller, instance, body: dict) -> Bank | None:
        """The bank the row belongs to, checked against the caller (404 for a bank not theirs,
        403 for a core row without a superuser); a row never moves between banks."""
        if cls.bank_field is None:
            return instance
        if instance is not None:
            current = getattr(instance, cls.bank_field)
            given = body.pop(cls.bank_field, current.slug if current else None)
            if given != (current.slug if current else None):
                raise InvalidInput(
                    "A row never moves between banks.",
                    fields={cls.bank_field: "Fixed at creation."},
                )
            slug = current.slug if current else None
        else:
            slug = body.get(cls.bank_field)
        return reach_row_bank(caller, slug, cls.scope, cls.bank_field)

    def execute(self) -> tuple[Any, Operation | None]:
        """The row written, and its operation (None for a core row or a change that changed
        nothing)."""
        instance = self.instance
        before = {}
        if instance is not None:
            before = {name: jsonable(getattr(instance, name)) for name in self.data}
        changed = {
            name: [before.get(name), jsonable(value)]
            for name, value in self.data.items()
            if instance is None or before.get(name) != jsonable(value)
        }
        if instance is not None and not changed:
            return instance, None
        label = self.model._meta.model_name
        verb = "changed" if instance is not None else "added"
        try:
            with config_unit(
                self.bank, f"{verb} {label} {self.data.get('name') or instance}"
            ) as op:
                row = self.serializer.save()
                if self.bank_field is None and self.bank is None:
                    self.bank = row  # a new bank: its creation is its first operation
                    op = self._open_bank_operation(row, verb, label)
                if instance is None:  # a new row: every declared field, as written
                    changed = {
                        name: [None, jsonable(getattr(row, name))]
                        for name, f in self.serializer.fields.items()
                        if not f.read_only
                    }
                if op is not None:
                    record_row(op, row.pk, label, verb, changed)
        except IntegrityError:
            raise Conflict(
                f"Another {label} with this name exists.",
                code="config_conflict",
                fields={"name": "Already taken."},
            ) from None
        logger.info("%s %s %s (%s) by %s", verb, label, row.pk, row, self.caller.actor)
        return row, op

    def _open_bank_operation(self, row, verb: str, label: str) -> Operation:
        from kb.unit_of_work import start_operation

        return start_operation(
            row, OperationKind.CONFIGURE, actor=self.caller.actor, reason=f"{verb} {label} {row}"
        )

    def present(self, result) -> dict:
        row, op = result
        return {"id": row.pk, "operation": op.pk if op is not None else None}


class DeleteConfigRow(Action):
    """Delete one unused configuration row (a kind or relation no row uses): one
    ``configure`` operation on its bank naming the row; a row in use is refused (409
    ``in_use``), and a core row needs a superuser or a system caller."""

    scope = Scope.CURATE
    model: ClassVar[type]
    path_ids = {"id": "id"}

    @classmethod
    def prepare(cls, caller: Caller, bank=None, *, ids=None, query=None, body=None) -> Action:
        pk = (ids or {}).get("id")
        instance = cls.model._default_manager.filter(pk=pk).first() if pk is not None else None
        if instance is None:
            raise NotFound(f"No {cls.model._meta.verbose_name} {pk}.", code="not_found")
        slug = instance.bank.slug if instance.bank_id else None
        row_bank = reach_row_bank(caller, slug, cls.scope)
        action = cls(row_bank, caller, ids=dict(ids or {}), data={})
        action.instance = instance
        return action

    def execute(self) -> Operation | None:
        from django.db.models import ProtectedError

        row, label = self.instance, self.model._meta.model_name
        fields = {name: [jsonable(getattr(row, name)), None] for name in ("name",)}
        try:
            with config_unit(self.bank, f"deleted {label} {row}") as op:
                pk = row.pk
                row.delete()
                if op is not None:
                    record_row(op, pk, label, "deleted", fields)
        except ProtectedError:
            raise Conflict(
                f"The {label} {row} is in use; it cannot be deleted.", code="in_use"
            ) from None
        logger.info("deleted %s %s (%s) by %s", label, pk, row, self.caller.actor)
        return op

    def present(self, op) -> dict:
        return {"deleted": True, "operation": op.pk if op is not None else None}
