from django.urls import path

from graph.api import entries_views as views

urlpatterns = [
    path("banks/<slug:bank>/entries", views.EntryListView.as_view(), name="entry-list"),
    path(
        "banks/<slug:bank>/entries/<str:entry_id>",
        views.EntryDetailView.as_view(),
        name="entry-detail",
    ),
    path(
        "banks/<slug:bank>/entries/<str:entry_id>/verify",
        views.EntryVerifyView.as_view(),
        name="entry-verify",
    ),
    path(
        "banks/<slug:bank>/entries/<str:entry_id>/retire",
        views.EntryRetireView.as_view(),
        name="entry-retire",
    ),
    path(
        "banks/<slug:bank>/entries/<str:entry_id>/restore",
        views.EntryRestoreView.as_view(),
        name="entry-restore",
    ),
    path(
        "banks/<slug:bank>/entries/<str:entry_id>/delete-plan",
        views.EntryDeletePlanView.as_view(),
        name="entry-delete-plan",
    ),
]
