from django.apps import AppConfig


class ServingConfig(AppConfig):
    name = "config.serving"
    label = "serving"
    verbose_name = "Serving"

    def ready(self) -> None:
        import warnings

        from django.conf import settings

        # WhiteNoise scans STATIC_ROOT when the application starts: it must exist.
        settings.STATIC_ROOT.mkdir(parents=True, exist_ok=True)
        # Under ASGI, Django reads WhiteNoise's file iterators in a thread and says so on every
        # file served.
        warnings.filterwarnings("ignore", message="StreamingHttpResponse must consume synchronous")
