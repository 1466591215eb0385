"""URLs of the manager pages (included at /workflows/)."""

from django.urls import path

from workflows import views

app_name = "workflows"

urlpatterns = [
    path("", views.process_list, name="overview"),
    path("<slug:bank>/", views.process_list, name="bank"),
    path("<slug:bank>/<str:process_id>/", views.process_detail, name="process"),
    path("<slug:bank>/<str:process_id>/regenerate", views.regenerate, name="regenerate"),
    path("<slug:bank>/<str:process_id>/findings.csv", views.findings_csv, name="csv"),
    path("<slug:bank>/<str:process_id>/flow.svg", views.flow_svg, name="flow-svg"),
    path(
        "<slug:bank>/<str:process_id>/findings/<int:finding_id>",
        views.finding_action,
        name="finding-action",
    ),
]
