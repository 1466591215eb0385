"""OPTIONS answers: view metadata only for a bank the caller holds (API.md: any other bank is
404, exactly as for GET), and for views that check access to another object (a job), only
after that check."""

from __future__ import annotations

from rest_framework.metadata import SimpleMetadata

from kb.api.auth import bank_for
from kb.models import Scope


class BankScopedMetadata(SimpleMetadata):
    def determine_metadata(self, request, view):
        slug = view.kwargs.get("bank")
        if slug is not None:
            bank_for(request, slug, Scope.READ)
        check = getattr(view, "check_options_access", None)
        if check is not None:
            check(request, **view.kwargs)
        return super().determine_metadata(request, view)
