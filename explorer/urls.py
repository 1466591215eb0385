"""Staff pages of the graph explorer (mounted at /explorer/)."""

from django.urls import path

from explorer import views

app_name = "explorer"

urlpatterns = [
    path("<slug:bank>/", views.explorer_page, name="page"),
    path(
        "<slug:bank>/entry/<str:entry_id>/neighbourhood.svg",
        views.neighbourhood_svg,
        name="neighbourhood",
    ),
    path("<slug:bank>/find.json", views.find_entries, name="find"),
    path("<slug:bank>/entry/<str:entry_id>/admin/", views.entry_admin, name="entry-admin"),
]
