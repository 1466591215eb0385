from django.urls import path

from graph.api import views

urlpatterns = [
    path("banks/<slug:bank>/query", views.QueryView.as_view(), name="bank-query"),
]
