from django.apps import AppConfig


class ClaimsdbConfig(AppConfig):
    name = "claimsdb"
    verbose_name = "claimsdb"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import signin  # noqa: F401 (connects the failed sign-in counter)
