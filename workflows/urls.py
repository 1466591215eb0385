"""URLs of the manager pages."""

urlpatterns: list = []
