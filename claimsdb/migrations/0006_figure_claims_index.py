"""A GIN index over figures' claim lists, so the scope check of a write finds the figures
that support an assessment's basis claims without reading every figure (PostgreSQL only:
SQLite has no index over JSON list elements)."""

from django.db import migrations

INDEX = "claimsdb_figure_claims_gin"


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {INDEX} ON claimsdb_figure USING gin (claims)"
        )


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("claimsdb", "0005_import_jobs")]

    operations = [migrations.RunPython(create_index, drop_index)]
