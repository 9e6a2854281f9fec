"""The confusable skeleton of every key and figure ID (``claimsdb/lookalike.py``), stored
and indexed so that a new key is checked against look-alikes with one lookup; existing
rows are filled here, in batches, from their keys."""

import unicodedata

from django.db import migrations, models

# claimsdb/lookalike.py as it was: the ASCII entries of Unicode's confusables.txt
_TABLE = str.maketrans({'"': "''", "0": "O", "1": "l", "I": "l", "`": "'", "m": "rn", "|": "l"})


def skeleton(text):
    mapped = unicodedata.normalize("NFD", text).translate(_TABLE)
    return unicodedata.normalize("NFD", mapped)


_BATCH = 2_000
# model → the field its skeleton is made from
SOURCES = {
    "assessmentmethod": "key",
    "case": "key",
    "figure": "figure_id",
    "scoperule": "key",
    "source": "key",
}


def fill(apps, schema_editor):
    for model_name, source in SOURCES.items():
        model = apps.get_model("claimsdb", model_name)
        target = "id_skeleton" if model_name == "figure" else "key_skeleton"
        last = 0
        while True:
            batch = list(
                model.objects.filter(pk__gt=last).order_by("pk").only("pk", source)[:_BATCH]
            )
            if not batch:
                break
            for row in batch:
                setattr(row, target, skeleton(getattr(row, source)))
            model.objects.bulk_update(batch, [target])
            last = batch[-1].pk


class Migration(migrations.Migration):
    dependencies = [("claimsdb", "0011_reads")]

    operations = [
        migrations.AddField(
            model_name="assessmentmethod",
            name="key_skeleton",
            field=models.CharField(db_index=True, default="", editable=False, max_length=200),
        ),
        migrations.AddField(
            model_name="case",
            name="key_skeleton",
            field=models.CharField(db_index=True, default="", editable=False, max_length=200),
        ),
        migrations.AddField(
            model_name="figure",
            name="id_skeleton",
            field=models.CharField(db_index=True, default="", editable=False, max_length=200),
        ),
        migrations.AddField(
            model_name="scoperule",
            name="key_skeleton",
            field=models.CharField(db_index=True, default="", editable=False, max_length=200),
        ),
        migrations.AddField(
            model_name="source",
            name="key_skeleton",
            field=models.CharField(db_index=True, default="", editable=False, max_length=200),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
