"""The cache table that every process shares (sign-in throttling counts failures there)."""

from django.core.management import call_command
from django.db import migrations


def create_cache_table(apps, schema_editor):
    # idempotent: an existing table is left as it is
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [("claimsdb", "0008_search_index")]

    operations = [migrations.RunPython(create_cache_table, migrations.RunPython.noop)]
