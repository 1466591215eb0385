from django.apps import AppConfig


class ExplorerConfig(AppConfig):
    name = "explorer"
    verbose_name = "Graph explorer"
    default_auto_field = "django.db.models.BigAutoField"
