from django.urls import path

from kb.api import views

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
    path("banks/<slug:bank>/import", views.ImportView.as_view(), name="bank-import"),
    path(
        "banks/<slug:bank>/recall/anchors", views.RecallAnchorsView.as_view(), name="recall-anchors"
    ),
    path("banks/<slug:bank>/stale", views.StaleEntriesView.as_view(), name="stale-entries"),
    path("jobs/<str:job_id>", views.JobView.as_view(), name="job-detail"),
]
