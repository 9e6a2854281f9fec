"""A figure's value kept as the number was written (``1.20`` stays ``1.20``), as text.

Values stored before were floats; each becomes the text its canonical document already
had (Python's ``repr`` of the float, an integer when integral), so no document, snapshot
or export changes by a byte.
"""

from django.db import migrations, models

BATCH = 1000


def float_text(value: float) -> str:
    # the canonical text of a float-era value (records.canonical.json_number then json):
    # an integer when integral, otherwise the float's repr
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


def fill(apps, schema_editor):
    Figure = apps.get_model("claimsdb", "Figure")
    last = 0
    while True:
        batch = list(
            Figure.objects.filter(pk__gt=last)
            .only("pk", "value", "value_text")
            .order_by("pk")[:BATCH]
        )
        if not batch:
            return
        for figure in batch:
            figure.value_text = float_text(float(figure.value))
        Figure.objects.bulk_update(batch, ["value_text"])
        last = batch[-1].pk


def unfill(apps, schema_editor):
    Figure = apps.get_model("claimsdb", "Figure")
    last = 0
    while True:
        batch = list(
            Figure.objects.filter(pk__gt=last)
            .only("pk", "value", "value_text")
            .order_by("pk")[:BATCH]
        )
        if not batch:
            return
        for figure in batch:
            figure.value = float(figure.value_text)
        Figure.objects.bulk_update(batch, ["value"])
        last = batch[-1].pk


class Migration(migrations.Migration):
    dependencies = [("claimsdb", "0011_reads")]

    operations = [
        migrations.AddField(
            model_name="figure",
            name="value_text",
            field=models.CharField(default="0", max_length=64),
            preserve_default=False,
        ),
        # nullable while both columns exist, so that going back can add the float column
        # to rows before they are filled again
        migrations.AlterField(
            model_name="figure", name="value", field=models.FloatField(null=True)
        ),
        migrations.RunPython(fill, unfill),
        migrations.RemoveField(model_name="figure", name="value"),
        migrations.RenameField(model_name="figure", old_name="value_text", new_name="value"),
    ]
