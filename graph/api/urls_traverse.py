"""URLs of the graph API's traverse endpoints (kept apart so each part owns its module)."""

urlpatterns: list = []
