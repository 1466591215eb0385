from django.apps import AppConfig


class GraphConfig(AppConfig):
    name = "graph"
    verbose_name = "Graph"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # kb never imports graph; graph plugs its parts into kb's extension points here.
        from graph.analytics import layout_store
        from graph.api.render import add_edges_and_aliases
        from graph.api.traverse_views import entry_as_of_response
        from graph.curation.delete import delete_entry
        from graph.edges.links import link_connections
        from graph.ingest import lines
        from kb import extensions

        extensions.registry.register(extensions.CONNECTION_LINKER, link_connections)
        extensions.registry.register(extensions.ENTRY_DELETER, delete_entry)
        extensions.registry.register(extensions.ENTRY_AS_OF, entry_as_of_response)
        extensions.registry.add_detail_extension(add_edges_and_aliases)
        lines.register()
        layout_store.connect_signals()
