"""Token lifecycle in the admin: expiry on the add and change forms, a state column and
filter (active, expired, revoked), and *Revoke* through the token service.

Imported at the bottom of ``kb/admin.py``; it extends whatever admin that module registered for
``AgentToken`` (so the two modules can change independently).
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.template.response import TemplateResponse
from django.utils import timezone

from kb import audit
from kb.models import AgentToken
from kb.services import tokens as token_service

_Base = (
    type(admin.site._registry[AgentToken])
    if admin.site.is_registered(AgentToken)
    else admin.ModelAdmin
)


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


def _plus(names, *extra):
    return tuple(names) + tuple(n for n in extra if n not in names)


class AgentTokenLifecycleAdmin(_Base):
    class Media:
        js = ("kb/copy.js",)  # the new secret's Copy button

    list_display = _plus(getattr(_Base, "list_display", ("name",)), "expires_at", "state")
    list_filter = (
        TokenStateFilter,
        *[f for f in getattr(_Base, "list_filter", ()) if f != "revoked_at"],
    )
    actions = ("revoke",)

    @admin.display(description="state")
    def state(self, obj: AgentToken) -> str:
        return token_service.token_state(obj)

    def get_fields(self, request, obj=None):
        return _plus(super().get_fields(request, obj), "expires_at")

    def get_readonly_fields(self, request, obj=None):
        return tuple(f for f in super().get_readonly_fields(request, obj) if f != "expires_at")

    def get_form(self, request, obj=None, change=False, **kwargs):
        base = super().get_form(request, obj, change=change, **kwargs)

        class TokenForm(base):
            def clean_expires_at(self):
                value = self.cleaned_data.get("expires_at")
                if (
                    value is not None
                    and value <= timezone.now()
                    and "expires_at" in self.changed_data
                ):
                    raise ValidationError("The expiry must be in the future.")
                return value

        return TokenForm

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        expires_at = form.cleaned_data.get("expires_at")
        if not change and expires_at is not None:
            token_service.set_token_expiry(obj, expires_at)

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
        result = token_service.revoke_tokens(queryset, actor=audit.current().actor)
        count = len(result.revoked)
        self.message_user(
            request,
            f"Revoked {count} token{'' if count == 1 else 's'}"
            + (f"; {len(result.already)} were already revoked." if result.already else "."),
            messages.SUCCESS,
        )


if admin.site.is_registered(AgentToken):
    admin.site.unregister(AgentToken)
admin.site.register(AgentToken, AgentTokenLifecycleAdmin)
