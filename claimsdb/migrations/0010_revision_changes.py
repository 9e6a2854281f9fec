"""What each revision changed and the date its document gives the record, for the history
pages (docs/architecture.md, "The ledger"): two columns, filled from the snapshots."""

import json

from django.db import migrations, models
from django.db.models import Q

from claimsdb.records.diff import changed_fields, record_date

BATCH = 500


def _batches(Revision):
    """Every revision in (record_kind, record_key, number) order, ``BATCH`` at a time."""
    revisions = Revision.objects.order_by("record_kind", "record_key", "number").only(
        "record_kind", "record_key", "number", "action", "snapshot"
    )
    last = None
    while True:
        batch = revisions
        if last is not None:
            kind, key, number = last
            batch = batch.filter(
                Q(record_kind__gt=kind)
                | Q(record_kind=kind, record_key__gt=key)
                | Q(record_kind=kind, record_key=key, number__gt=number)
            )
        batch = list(batch[:BATCH])
        if not batch:
            return
        yield batch
        last = (batch[-1].record_kind, batch[-1].record_key, batch[-1].number)


def fill(apps, schema_editor):
    """Each revision against the record's revision before it. Of the loads from bundles
    only creations are known now: they get the document's date."""
    Revision = apps.get_model("claimsdb", "Revision")
    record, previous = None, None
    for batch in _batches(Revision):
        changed = []
        for revision in batch:
            document = json.loads(revision.snapshot)
            if (revision.record_kind, revision.record_key) != record:
                record, previous = (revision.record_kind, revision.record_key), None
            revision.changed = changed_fields(previous, document)
            if revision.action == "create":
                revision.dated_on = record_date(revision.record_kind, document)
            if revision.changed or revision.dated_on:
                changed.append(revision)
            previous = document
        Revision.objects.bulk_update(changed, ["changed", "dated_on"])


class Migration(migrations.Migration):
    dependencies = [("claimsdb", "0009_cache_table")]

    operations = [
        migrations.AddField(
            model_name="revision",
            name="changed",
            field=models.JSONField(
                default=list,
                help_text="the fields changed since the record's previous revision "
                "(records.changed_fields); empty for its first",
            ),
        ),
        migrations.AddField(
            model_name="revision",
            name="dated_on",
            field=models.DateField(
                blank=True,
                null=True,
                help_text="the date the document gives its own record (records.record_date), "
                "for a revision that brought the document in: a creation or a bundle load",
            ),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
