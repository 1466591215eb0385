"""URL of graph data for pictures."""

from django.urls import path

from graph.api.graph_views import (
    GraphAroundView,
    GraphCommunitiesView,
    GraphCommunityView,
    GraphDataView,
)

urlpatterns = [
    path("banks/<slug:bank>/graph", GraphDataView.as_view(), name="bank-graph"),
    path(
        "banks/<slug:bank>/graph/communities",
        GraphCommunitiesView.as_view(),
        name="bank-graph-communities",
    ),
    path(
        "banks/<slug:bank>/graph/communities/<str:community_id>",
        GraphCommunityView.as_view(),
        name="bank-graph-community",
    ),
    path("banks/<slug:bank>/graph/around", GraphAroundView.as_view(), name="bank-graph-around"),
]
