from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    name = "workflows"
    verbose_name = "Workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Edits of a process's entries or edges schedule a debounced report rebuild.
        from django.db.models.signals import post_save

        from graph.models import Edge
        from kb.models import Entry
        from kb.signals import rows_written
        from workflows.services.scheduling import edge_saved, entry_saved
        from workflows.services.scheduling import rows_written as set_wise_written

        post_save.connect(edge_saved, sender=Edge, dispatch_uid="workflows.edge_saved")
        post_save.connect(entry_saved, sender=Entry, dispatch_uid="workflows.entry_saved")
        rows_written.connect(set_wise_written, dispatch_uid="workflows.rows_written")

        # The context bundle (graph) shows open findings that name its entries.
        from graph.retrieval.context import register_finding_provider
        from workflows.services.context_findings import open_findings_naming

        register_finding_provider(open_findings_naming)
