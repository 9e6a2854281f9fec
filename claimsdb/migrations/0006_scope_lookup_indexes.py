"""Indexes the scope check of a write looks records up by: rules by the case and figure
they name, and (PostgreSQL only: SQLite has no index over JSON list elements) a GIN index
over figures' claim lists, to find the figures that support an assessment's basis claims
without reading every figure."""

from django.db import migrations, models

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

    operations = [
        migrations.AddIndex(
            model_name="scoperule",
            index=models.Index(fields=["case"], name="scoperule_case_idx"),
        ),
        migrations.AddIndex(
            model_name="scoperule",
            index=models.Index(fields=["figure"], name="scoperule_figure_idx"),
        ),
        migrations.RunPython(create_index, drop_index),
    ]
