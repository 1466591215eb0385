from django.apps import AppConfig


class KbConfig(AppConfig):
    name = "kb"
    verbose_name = "Knowledge bank"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from simple_history.signals import pre_create_historical_record

        import kb.api.openapi  # noqa: F401  (registers the OpenAPI auth extension)
        from kb.audit import fill_history_row
        from kb.unit_of_work import connect_row_signals

        # The unit of work: one stamp for every history row, one event per committed write.
        pre_create_historical_record.connect(fill_history_row, dispatch_uid="kb_fill_history_row")
        connect_row_signals()
