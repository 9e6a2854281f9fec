from django.apps import AppConfig


class ClaimsdbConfig(AppConfig):
    name = "claimsdb"
    verbose_name = "claimsdb"
    default_auto_field = "django.db.models.BigAutoField"
