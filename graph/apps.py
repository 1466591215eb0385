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
        from graph.services import bulk_lines
        from graph.services.curation import delete_entry
        from graph.services.edges import link_connections
        from kb.api import render
        from kb.services import entries

        entries.CONNECTION_LINKER = link_connections
        render.ENTRY_AS_OF = entry_as_of_response
        entries.ENTRY_DELETER = delete_entry
        if add_edges_and_aliases not in render.DETAIL_EXTENSIONS:
            render.DETAIL_EXTENSIONS.append(add_edges_and_aliases)
        bulk_lines.register()
        layout_store.connect_signals()
