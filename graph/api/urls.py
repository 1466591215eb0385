from django.urls import path

from graph.api import proposals_views, views

urlpatterns = [
    path("banks/<slug:bank>/query", views.QueryView.as_view(), name="bank-query"),
    path("banks/<slug:bank>/edges", views.EdgeListView.as_view(), name="edge-list"),
    path(
        "banks/<slug:bank>/edges/<str:edge_id>", views.EdgeDetailView.as_view(), name="edge-detail"
    ),
    path(
        "banks/<slug:bank>/edges/<str:edge_id>/unlink",
        views.EdgeUnlinkView.as_view(),
        name="edge-unlink",
    ),
    path(
        "banks/<slug:bank>/edges/<str:edge_id>/retype",
        views.EdgeRetypeView.as_view(),
        name="edge-retype",
    ),
    path(
        "banks/<slug:bank>/edges/<str:edge_id>/invalidate",
        views.EdgeInvalidateView.as_view(),
        name="edge-invalidate",
    ),
    path("banks/<slug:bank>/resolve", views.ResolveView.as_view(), name="resolve"),
    path("banks/<slug:bank>/merges", views.MergeView.as_view(), name="merge"),
    path(
        "banks/<slug:bank>/proposals",
        proposals_views.ProposalListView.as_view(),
        name="proposal-list",
    ),
    path(
        "banks/<slug:bank>/proposals/<str:proposal_id>/decide",
        proposals_views.ProposalDecideView.as_view(),
        name="proposal-decide",
    ),
    path(
        "banks/<slug:bank>/operations/<str:op_id>",
        views.OperationView.as_view(),
        name="operation-detail",
    ),
    path(
        "banks/<slug:bank>/operations/<str:op_id>/revert",
        views.OperationRevertView.as_view(),
        name="operation-revert",
    ),
]
