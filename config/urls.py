from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from graph.api.analytics_views import stats_page
from kb.admin_jobs import jobs_page
from kb.api.errors import json_not_found
from kb.views import bank_switch, favicon, home

urlpatterns = [
    path("", home, name="home"),
    path("banks/go/", bank_switch, name="bank-switch"),
    path("favicon.ico", favicon, name="favicon"),
    path("admin/graph/stats/<slug:bank>/", stats_page, name="graph-stats-page"),
    path("admin/jobs/", jobs_page, name="admin-jobs"),
    path("admin/", admin.site.urls),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves its script as a file: the page needs no inline script (CSP).
    path("api/v1/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="docs"),
    path("api/v1/", include("graph.api.urls_entries")),
    path("api/v1/", include("kb.api.urls")),
    path("api/v1/", include("kb.api.urls_claims")),
    path("api/v1/", include("graph.api.urls")),
    path("api/v1/", include("graph.api.urls_traverse")),
    path("api/v1/", include("graph.api.urls_analytics")),
    path("api/v1/", include("graph.api.urls_graph")),
    path("api/v1/", include("graph.api.urls_context")),
    path("api/v1/", include("graph.api.urls_extraction")),
    path("api/v1/", include("workflows.api.urls")),
    path("workflows/", include("workflows.urls")),
    path("explorer/", include("explorer.urls")),
    path("", include("config.serving.urls")),
]

handler404 = json_not_found
handler500 = "config.serving.errors.server_error_handler"
