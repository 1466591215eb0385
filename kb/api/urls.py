from django.urls import path

from kb.api import views

urlpatterns = [
    path("banks/<slug:bank>/import", views.ImportView.as_view(), name="bank-import"),
    path(
        "banks/<slug:bank>/recall/anchors", views.RecallAnchorsView.as_view(), name="recall-anchors"
    ),
    path("banks/<slug:bank>/stale", views.StaleEntriesView.as_view(), name="stale-entries"),
    path("jobs/<str:job_id>", views.JobView.as_view(), name="job-detail"),
]
