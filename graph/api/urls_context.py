"""URL of the context bundle (included at /api/v1/)."""

from django.urls import path

from graph.api.context_views import ContextView

urlpatterns = [
    path("banks/<slug:bank>/context", ContextView.as_view(), name="bank-context"),
]
