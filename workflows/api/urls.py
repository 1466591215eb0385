"""URLs of the workflows API."""

urlpatterns: list = []
