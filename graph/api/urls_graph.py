"""URL of graph data for pictures."""

from django.urls import path

from graph.api.graph_views import GraphDataView

urlpatterns = [
    path("banks/<slug:bank>/graph", GraphDataView.as_view(), name="bank-graph"),
]
