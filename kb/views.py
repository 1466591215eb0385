"""The landing page at ``/``: where the admin's "View site" leads."""

from django.shortcuts import render

from kb.models import Bank


def home(request):
    """Links to the admin, the API docs and the workflow pages; staff also see their banks'
    explorers (bank names are not shown to anonymous visitors)."""
    banks = list(Bank.objects.order_by("slug")) if request.user.is_staff else []
    return render(request, "home.html", {"banks": banks})
