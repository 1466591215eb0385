"""URLs of edge extraction: queue a run, list and decide proposals."""

from django.urls import path

from graph.api import extraction_views as views

urlpatterns = [
    path("banks/<slug:bank>/extractions", views.ExtractionView.as_view(), name="extractions"),
    path(
        "banks/<slug:bank>/edge-proposals",
        views.EdgeProposalListView.as_view(),
        name="edge-proposal-list",
    ),
    path(
        "banks/<slug:bank>/edge-proposals/<str:proposal_id>/decide",
        views.EdgeProposalDecideView.as_view(),
        name="edge-proposal-decide",
    ),
]
