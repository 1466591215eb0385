"""URLs of claims (included at /api/v1/)."""

from django.urls import path

from kb.api import claims_views as views

urlpatterns = [
    path("banks/<slug:bank>/claims", views.ClaimListView.as_view(), name="claim-list"),
    path(
        "banks/<slug:bank>/claims/<str:claim_id>/release",
        views.ClaimReleaseView.as_view(),
        name="claim-release",
    ),
]
