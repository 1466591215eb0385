"""URLs of the workflows API (included at /api/v1/)."""

from django.urls import path

from workflows.api import views

urlpatterns = [
    path("banks/<slug:bank>/workflows/", views.WorkflowListView.as_view(), name="workflow-list"),
    path("banks/<slug:bank>/workflows", views.WorkflowListAliasView.as_view()),
    path(
        "banks/<slug:bank>/workflows/<str:process_id>/gaps",
        views.WorkflowGapsView.as_view(),
        name="workflow-gaps",
    ),
    path(
        "banks/<slug:bank>/workflows/<str:process_id>/gaps/", views.WorkflowGapsAliasView.as_view()
    ),
]
