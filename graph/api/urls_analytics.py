"""URLs of the graph API's analytics endpoints (kept apart so each part owns its module)."""

from django.urls import path

from graph.api import analytics_views as views

urlpatterns = [
    path("banks/<slug:bank>/search/ppr", views.PPRSearchView.as_view(), name="search-ppr"),
    path("banks/<slug:bank>/search/facts", views.FactSearchView.as_view(), name="search-facts"),
    path("banks/<slug:bank>/communities", views.CommunityListView.as_view(), name="communities"),
    path(
        "banks/<slug:bank>/entries/<str:entry_id>/community",
        views.EntryCommunityView.as_view(),
        name="entry-community",
    ),
    path(
        "banks/<slug:bank>/entries/<str:entry_id>/split",
        views.EntrySplitView.as_view(),
        name="entry-split",
    ),
    path("banks/<slug:bank>/stats", views.StatsView.as_view(), name="bank-stats"),
]
