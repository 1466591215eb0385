from django.apps import AppConfig


class ServingConfig(AppConfig):
    name = "config.serving"
    label = "serving"
    verbose_name = "Serving"

    def ready(self) -> None:
        import warnings

        from django.conf import settings
        from django.db.models.signals import post_save

        # WhiteNoise scans STATIC_ROOT when the application starts: it must exist.
        settings.STATIC_ROOT.mkdir(parents=True, exist_ok=True)
        # Under ASGI, Django reads WhiteNoise's file iterators in a thread and says so on every
        # file served.
        warnings.filterwarnings("ignore", message="StreamingHttpResponse must consume synchronous")

        from config.serving.context import note_operation
        from kb.models import Operation

        post_save.connect(note_operation, sender=Operation, dispatch_uid="kb_serving_operation")
