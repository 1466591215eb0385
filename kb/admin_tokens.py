"""Agent tokens in the admin: created only by the ``CreateToken`` action (the raw secret is
shown once, with a Copy button, and never stored), expiry on the add and change forms
(``SetTokenExpiry``), a state column and filter (active, expired, revoked), and *Revoke* —
after a confirmation page naming the tokens — only through ``RevokeTokens``. Each is one
operation per bank the token holds (:mod:`kb.actions.tokens`): a revoked token cannot be
revived by editing it (``revoked_at`` is read-only)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.widgets import AutocompleteSelectMultiple
from django.db.models import Q
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.html import format_html

from kb.actions.staff import execute_prepared, prepare_as, run_as_staff, staff_caller
from kb.actions.tokens import CreateToken, RevokeTokens, SetTokenExpiry
from kb.admin_filters import TokenBankFilter
from kb.errors import KbError
from kb.models import AgentToken, Bank, Scope
from kb.services import tokens as token_service


class TokenStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return (("active", "active"), ("expired", "expired"), ("revoked", "revoked"))

    def queryset(self, request, queryset):
        now = timezone.now()
        if self.value() == "active":
            return queryset.filter(revoked_at__isnull=True).filter(
                Q(expires_at__isnull=True) | Q(expires_at__gt=now)
            )
        if self.value() == "expired":
            return queryset.filter(revoked_at__isnull=True, expires_at__lte=now)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


class AgentTokenAddForm(forms.ModelForm):
    """Name, banks and scopes; the secret, prefix and hash come from ``create_token``."""

    scopes = forms.MultipleChoiceField(
        choices=Scope.choices,
        widget=forms.CheckboxSelectMultiple,
        help_text="read: query; write: add and edit entries; curate: retire, merge, revert.",
    )
    banks = forms.ModelMultipleChoiceField(
        queryset=Bank.objects.filter(archived_at__isnull=True),
        # A search-as-you-type picker: a site may hold hundreds of banks.
        widget=AutocompleteSelectMultiple(AgentToken._meta.get_field("banks"), admin.site),
    )

    class Meta:
        model = AgentToken
        fields = ("name", "banks", "scopes")


@admin.register(AgentToken)
class AgentTokenAdmin(admin.ModelAdmin):
    class Media:
        js = ("kb/copy.js",)  # the new secret's Copy button

    list_display = (
        "name",
        "prefix",
        "scopes_display",
        "banks_display",
        "created_at",
        "last_used_at",
        "revoked_at",
        "expires_at",
        "state",
    )
    list_filter = (TokenStateFilter, TokenBankFilter)
    search_fields = ("name", "prefix")
    actions = ("revoke",)
    change_fields = (
        "name",
        "prefix",
        "scopes",
        "banks",
        "created_at",
        "created_by",
        "last_used_at",
        "revoked_at",
        "expires_at",
    )

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("banks")

    @admin.display(description="state")
    def state(self, obj: AgentToken) -> str:
        return token_service.token_state(obj)

    @admin.display(description="scopes")
    def scopes_display(self, obj: AgentToken) -> str:
        return ", ".join(obj.scopes)

    @admin.display(description="banks")
    def banks_display(self, obj: AgentToken) -> str:
        return ", ".join(b.slug for b in obj.banks.all())

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = AgentTokenAddForm
        base = super().get_form(request, obj, change=change, **kwargs)
        caller = staff_caller(request)

        class TokenForm(base):
            """The add form prepares ``CreateToken``, the change form (when the expiry moved)
            ``SetTokenExpiry``: the action's declaration checks the values, and a refusal
            shows on its field before anything is written."""

            prepared = None

            def clean(self):
                cleaned = super().clean()
                if self.errors:
                    return cleaned
                expires_at = cleaned.get("expires_at")
                expiry = expires_at.isoformat() if expires_at is not None else None
                try:
                    if obj is None:
                        body = {
                            "name": cleaned.get("name") or "",
                            "banks": [b.slug for b in cleaned.get("banks") or ()],
                            "scopes": list(cleaned.get("scopes") or ()),
                            "expires_at": expiry,
                        }
                        self.prepared = prepare_as(caller, CreateToken, None, body=body)
                    elif "expires_at" in self.changed_data:
                        self.prepared = prepare_as(
                            caller,
                            SetTokenExpiry,
                            None,
                            ids={"id": obj.pk},
                            body={"expires_at": expiry},
                        )
                except KbError as exc:
                    placed = [n for n in (exc.fields or {}) if n in self.fields]
                    for name in placed:
                        self.add_error(name, exc.fields[name])
                    if not placed:
                        self.add_error(None, exc.message)
                return cleaned

        return TokenForm

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("name", "banks", "scopes", "expires_at")
        return self.change_fields

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        # token_hash is never shown; everything is fixed at creation. revoked_at changes only
        # through the Revoke action (the token service, with an audit row): a revoked token
        # cannot be revived by editing it. The expiry stays editable.
        return tuple(f for f in self.change_fields if f != "expires_at")

    def save_model(self, request, obj, form, change):
        """Execute the action the form prepared (the token actions: no bank, staff actor,
        one operation per bank the token holds). On change only the expiry is written: a
        whole-row save would write back the revoked_at read when the page loaded, and so
        revive a token revoked meanwhile."""
        if form.prepared is None:
            return
        result = execute_prepared(form.prepared)
        if change:
            return
        token = result.token
        # The admin keeps working with ``obj``: make it the row the action wrote.
        for field in AgentToken._meta.concrete_fields:
            setattr(obj, field.attname, getattr(token, field.attname))
        obj._state.adding = False
        obj._state.db = token._state.db
        request._kb_raw_token = result.raw  # shown once by response_add, never stored

    def save_related(self, request, form, formsets, change):
        """Nothing: on add ``create_token`` bound the banks; on change they are read-only."""

    def response_add(self, request, obj, post_url_continue=None):
        raw = getattr(request, "_kb_raw_token", None)
        if raw:
            messages.success(
                request,
                format_html(
                    'Token “{}” created. Copy it now; it is not shown again: <code id="kb-secret"'
                    ' class="kb-secret">{}</code> <button type="button" data-copy="kb-secret">'
                    "Copy</button>",
                    obj.name,
                    raw,
                ),
            )
            del request._kb_raw_token
        return super().response_add(request, obj, post_url_continue)

    @admin.action(description="Revoke (stops working at once)", permissions=["change"])
    def revoke(self, request, queryset):
        """Asks first (a confirmation page naming the tokens), then revokes."""
        if request.POST.get("confirmed") != "yes":
            return TemplateResponse(
                request,
                "admin/kb/agenttoken/revoke_confirmation.html",
                {
                    **self.admin_site.each_context(request),
                    "title": "Revoke tokens?",
                    "opts": self.model._meta,
                    "tokens": list(queryset.order_by("name")),
                },
            )
        result = run_as_staff(
            request,
            RevokeTokens,
            None,
            body={"ids": list(queryset.values_list("pk", flat=True)), "reason": "admin: revoke"},
        )
        count = len(result.revoked)
        self.message_user(
            request,
            f"Revoked {count} token{'' if count == 1 else 's'}"
            + (f"; {len(result.already)} were already revoked." if result.already else "."),
            messages.SUCCESS,
        )
