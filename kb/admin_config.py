"""Admin add, change and delete pages of configuration rows (banks, entry kinds, relation types) that
save through their action (:class:`kb.actions.config_rows.SaveConfigRow`).

The form's values become the action's body; the action's declaration (a DRF serializer)
checks them while the form validates, so a refused value shows on its field and nothing is
written; ``save_model`` then executes the prepared action (one ``configure`` operation on the
row's bank). The form does not run the model's own validation: the action's input is the one
declaration of what a row may hold.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.forms.models import construct_instance
from django.http import HttpResponseRedirect

from kb.actions.staff import execute_as, execute_prepared, prepare_as, staff_caller
from kb.errors import KbError
from kb.models import Bank


def body_value(value):
    """A form value as the action's JSON body carries it."""
    if isinstance(value, Bank):
        return value.slug
    if isinstance(value, tuple):
        return list(value)
    return value


class ActionModelForm(forms.ModelForm):
    """A model form whose values are checked by ``save_action`` (set per request with the
    staff ``caller``); the prepared action waits in ``prepared`` for ``save_model``."""

    caller = None
    save_action = None
    prepared = None

    def _post_clean(self):
        opts = self._meta
        try:
            self.instance = construct_instance(self, self.instance, opts.fields, opts.exclude)
        except ValidationError as exc:
            self._update_errors(exc)
        if self.errors:
            return
        declared = self.save_action.Input().fields
        body = {
            name: body_value(value)
            for name, value in self.cleaned_data.items()
            if name in declared and not declared[name].read_only
        }
        ids = {"id": self.instance.pk} if self.instance.pk is not None else None
        try:
            self.prepared = prepare_as(self.caller, self.save_action, None, ids=ids, body=body)
        except KbError as exc:
            placed = False
            for name, message in (exc.fields or {}).items():
                if name in self.fields and name in self.cleaned_data:
                    self.add_error(name, message)
                    placed = True
            if not placed:
                self.add_error(None, exc.message)


class ActionSaveAdmin:
    """ModelAdmin mixin: add and change pages save through ``save_action``."""

    form = ActionModelForm
    save_action = None
    delete_action = None  # None: the page offers no delete

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        attrs = {"caller": staff_caller(request), "save_action": self.save_action}
        return type(form.__name__, (form,), attrs)

    def save_model(self, request, obj, form, change):
        """Execute the action the form prepared; the admin keeps working with ``obj``."""
        row, _op = execute_prepared(form.prepared)
        for field in type(row)._meta.concrete_fields:
            setattr(obj, field.attname, getattr(row, field.attname))
        obj._state.adding = False
        obj._state.db = row._state.db

    def has_delete_permission(self, request, obj=None):
        return self.delete_action is not None and super().has_delete_permission(request, obj)

    def delete_model(self, request, obj):
        """Through ``delete_action`` (one ``configure`` operation on the row's bank)."""
        execute_as(staff_caller(request), self.delete_action, None, ids={"id": obj.pk})

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self.delete_model(request, obj)

    def delete_view(self, request, object_id, extra_context=None):
        try:
            return super().delete_view(request, object_id, extra_context)
        except KbError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except KbError as exc:
            # Refused while saving (a row written meanwhile): the admin's transaction rolled
            # back, nothing is half-written; say why and show the page again.
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())
