from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from graph.api.analytics_views import stats_page
from kb.api.errors import json_not_found

urlpatterns = [
    path("admin/graph/stats/<slug:bank>/", stats_page, name="graph-stats-page"),
    path("admin/", admin.site.urls),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/v1/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("api/v1/", include("kb.api.urls")),
    path("api/v1/", include("graph.api.urls")),
    path("api/v1/", include("graph.api.urls_traverse")),
    path("api/v1/", include("graph.api.urls_analytics")),
    path("api/v1/", include("graph.api.urls_extraction")),
    path("api/v1/", include("workflows.api.urls")),
    path("workflows/", include("workflows.urls")),
]

handler404 = json_not_found
