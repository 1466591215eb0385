from django.apps import AppConfig


class GraphConfig(AppConfig):
    name = "graph"
    verbose_name = "Graph"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from graph.analytics import layout_store
        from graph.ingest import lines

        lines.register()
        layout_store.connect_signals()
