"""The admin site of the whole project (the composition root, like ``config.urls``).

One :class:`KnowledgeBankSite` instead of patching ``admin.site``: its header, the index page
(each bank with its counts and pages, ``templates/admin/kb_index.html``) and the autocomplete
answers that name an entry by title, kind, bank and id (``graph.admin.entries``). Apps
register their ModelAdmins on it as usual (``@admin.register``), each model once, in the app
that owns its use cases: no app unregisters or replaces another's admin.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig


class KnowledgeBankSite(admin.AdminSite):
    site_header = "Knowledge Bank"
    site_title = "Knowledge Bank admin"
    index_title = "Knowledge Bank administration"
    index_template = "admin/kb_index.html"  # each bank, its counts and pages

    def autocomplete_view(self, request):
        from graph.admin.entries import EntryAutocomplete

        return EntryAutocomplete.as_view(admin_site=self)(request)


class KnowledgeBankAdminConfig(AdminConfig):
    """``django.contrib.admin`` with :class:`KnowledgeBankSite` as ``admin.site``."""

    default_site = "config.admin_site.KnowledgeBankSite"
