"""URLs of the graph API's traverse endpoints (kept apart so each part owns its module)."""

from django.urls import path

from graph.api import traverse_views as views

urlpatterns = [
    path("banks/<slug:bank>/traverse", views.TraverseView.as_view(), name="traverse"),
    path(
        "banks/<slug:bank>/entities/<str:entry_id>/dependents",
        views.DependentsView.as_view(),
        name="entity-dependents",
    ),
    path(
        "banks/<slug:bank>/entities/<str:entry_id>/owners",
        views.OwnersView.as_view(),
        name="entity-owners",
    ),
    path(
        "banks/<slug:bank>/entities/<str:entry_id>/approvals",
        views.ApprovalsView.as_view(),
        name="entity-approvals",
    ),
    path(
        "banks/<slug:bank>/entities/<str:entry_id>/changes",
        views.ChangesView.as_view(),
        name="entity-changes",
    ),
    path(
        "banks/<slug:bank>/entries/<str:entry_id>/as_of",
        views.EntryAsOfView.as_view(),
        name="entry-as-of",
    ),
    path("banks/<slug:bank>/corrections", views.CorrectionsView.as_view(), name="corrections"),
]
