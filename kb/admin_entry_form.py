"""The admin's entry form: its cleaned values become the body of the entry actions — create
(``POST …/entries``) and edit (``PATCH …/entries/{id}``) — and the action, the same one REST
and MCP run, checks and writes them. The form has no rules of its own beyond turning widgets
into the body: the action's declared input (its ``Input`` serializer) and its service are the
one place the values are checked.

The action runs when the admin saves (``save_model``), inside the admin's transaction. If it
refuses, :class:`ActionRefused` leaves the transaction (so nothing is written: not the entry,
not an inline's edge) and the admin shows the page again with the refusal on the form — on
the field the action names, or above the form.
"""

from __future__ import annotations

from datetime import datetime

from django import forms
from django.forms.models import construct_instance

from kb.actions.staff import execute_prepared, prepare_as
from kb.admin_metadata import MetadataField, StepsField
from kb.errors import KbError
from kb.models import Entry

# Form fields -> the body field of the entry actions they fill.
BODY_FIELD = {
    "title": "title",
    "key": "key",
    "summary": "summary",
    "content": "content",
    "useful_for": "useful_for",
    "kind": "kind",
    "systems": "systems",
    "tasks": "tasks",
    "steps": "steps",
    "metadata": "metadata",
    "anchor_files": "anchors",
    "anchor_symbols": "anchors",
    "durable": "lifetime",
    "expires_at": "lifetime",
    "resolved_by": "lifetime",
}


class ActionRefused(Exception):
    """An action refused what the admin page sent, while the page was saving: raised out of
    the admin's transaction (rolling it back) and shown on the page again. ``on_form``: the
    refusal's field names are the entry form's (else it is shown above the form)."""

    def __init__(self, error: KbError, *, on_form: bool = True):
        super().__init__(error.message)
        self.error, self.on_form = error, on_form


class EntryAdminForm(forms.ModelForm):
    """The entry form as the body of the create or edit action (set per request by
    ``EntryAdmin.get_form``: ``caller``, ``create_action``, ``update_action`` and, when the
    action refused this same submission, ``refused``)."""

    # Body fields of the action's errors -> the form field that shows them (None: above).
    ERROR_FIELDS = {"anchors": "anchor_files", "lifetime": None}

    caller = None
    create_action = None
    update_action = None
    refused: ActionRefused | None = None

    allow_duplicate = forms.BooleanField(
        required=False,
        label="Store even if it duplicates an entry",
        help_text="Otherwise a near-exact copy of an existing entry is refused: update or link "
        "to that entry instead.",
    )

    class Meta:
        model = Entry
        fields = "__all__"
        field_classes = {"steps": StepsField, "metadata": MetadataField}

    def _bank(self):
        if self.instance.pk is not None:
            return self.instance.bank
        return self.cleaned_data.get("bank")

    def body(self) -> dict:
        """The cleaned form as the action's body: every field for a new entry (with
        ``allow_duplicate`` when ticked), for an edit the fields whose value differs from the
        stored entry's (an unchanged form is no edit)."""
        body = body_of(self.cleaned_data)
        if self.instance.pk is None:
            sent = {BODY_FIELD[name] for name in self.fields if name in BODY_FIELD}
            if self.cleaned_data.get("allow_duplicate"):
                body["allow_duplicate"] = True
                sent.add("allow_duplicate")
        else:
            stored = Entry.objects.select_related("kind", "resolved_by").get(pk=self.instance.pk)
            was = body_of({name: getattr(stored, name) for name in BODY_FIELD})
            sent = {
                BODY_FIELD[name]
                for name in self.fields
                if name in BODY_FIELD and body[BODY_FIELD[name]] != was[BODY_FIELD[name]]
            }
        return {name: as_json(value) for name, value in body.items() if name in sent}

    def clean(self):
        data = super().clean()
        bank = self._bank()
        if bank is None or self.errors:
            return data
        if data.get("kind") is not None and data["kind"].bank_id not in (None, bank.pk):
            # The form offers every bank's kinds; the action looks kinds up by name in this
            # bank, where a foreign kind is not one.
            self.add_error("kind", f"Kind {data['kind']} belongs to another bank.")
            return data
        if self.refused is not None:  # the action refused this submission: say why
            self.show(self.refused.error, on_form=self.refused.on_form)
            return data
        try:
            self.action = self.prepared(bank)
        except KbError as exc:
            self.show(exc)
        return data

    def _post_clean(self):
        # The action checks the values (its declared input, then its service, with the bank's
        # limits and vocabulary); the model's own validation would state the same rules a
        # second time in other words. The instance only takes the values for the page.
        opts = self._meta
        self.instance = construct_instance(self, self.instance, opts.fields, opts.exclude)

    def prepared(self, bank):
        """The create or edit action with this form's body, its input checked (None: an
        edit that changes nothing)."""
        body = self.body()
        if self.instance.pk is None:
            return prepare_as(self.caller, self.create_action, bank, body=body)
        if not body:
            return None
        return prepare_as(
            self.caller, self.update_action, bank, ids={"id": self.instance.short_id}, body=body
        )

    def show(self, error: KbError, *, on_form: bool = True) -> None:
        """An action's refusal on the form: on the field it names, else above the form."""
        if on_form and error.code == "duplicate_entry" and "allow_duplicate" in self.fields:
            self.add_error("allow_duplicate", error.message)
            return
        fields = (error.fields or {}) if on_form else {}
        for name, message in fields.items():
            target = self.ERROR_FIELDS.get(name, name)
            self.add_error(target if target in self.fields else None, message)
        if not fields:
            self.add_error(None, error.message)

    def write(self) -> Entry:
        """Run the prepared action (the admin's save); the entry as it now stands. A refusal
        is raised as :class:`ActionRefused` (the admin rolls back and shows it)."""
        if self.action is None:
            return Entry.objects.get(pk=self.instance.pk)
        try:
            result = execute_prepared(self.action)
        except KbError as exc:
            raise ActionRefused(exc) from exc
        # create answers (entry, edges, feedback)
        return result[0] if isinstance(result, tuple) else result


def body_of(values) -> dict:
    """Entry values named as the form names them (cleaned form data, or a stored entry's
    attributes) as the entry actions' body (dates still ``datetime``, for comparing)."""
    lifetime = {}
    if values.get("durable"):
        lifetime["durable"] = True
    if values.get("expires_at"):
        lifetime["expires_at"] = values["expires_at"]
    if values.get("resolved_by") is not None:
        lifetime["resolved_by"] = values["resolved_by"].short_id
    return {
        "title": values.get("title"),
        "key": values.get("key") or None,
        "summary": values.get("summary") or "",
        "content": values.get("content") or "",
        "useful_for": values.get("useful_for") or "",
        "kind": values["kind"].name if values.get("kind") is not None else None,
        "systems": list(values.get("systems") or []),
        "tasks": list(values.get("tasks") or []),
        "steps": values.get("steps") or None,
        "metadata": values.get("metadata") or {},
        "anchors": {
            "files": list(values.get("anchor_files") or []),
            "symbols": list(values.get("anchor_symbols") or []),
        },
        "lifetime": lifetime,
    }


def as_json(value):
    """A body value as JSON carries it (an expiry as an ISO timestamp)."""
    if isinstance(value, dict) and isinstance(value.get("expires_at"), datetime):
        return {**value, "expires_at": value["expires_at"].isoformat()}
    return value
