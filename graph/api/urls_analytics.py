"""URLs of the graph API's analytics endpoints (kept apart so each part owns its module)."""

urlpatterns: list = []
