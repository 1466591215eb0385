from django.apps import AppConfig


class ServingConfig(AppConfig):
    name = "config.serving"
    label = "serving"
    verbose_name = "Serving"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from config.serving.context import note_operation
        from kb.models import Operation

        post_save.connect(note_operation, sender=Operation, dispatch_uid="kb_serving_operation")
