from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    name = "workflows"
    verbose_name = "Workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Committed edits of a process's entries or edges schedule a debounced report rebuild:
        # one subscription to the unit of work's post-commit event.
        from kb.events import bank_changed as committed
        from workflows.services.scheduling import bank_changed

        committed.connect(bank_changed, dispatch_uid="workflows.bank_changed")

        # The context bundle (graph) shows open findings that name its entries.
        from graph.retrieval.context import register_finding_provider
        from workflows.services.context_findings import open_findings_naming

        register_finding_provider(open_findings_naming)
