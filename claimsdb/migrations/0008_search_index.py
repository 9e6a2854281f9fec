"""The search index (docs/search.md): one table of searchable entries, filled here from the
live tables (working entries) and the latest released revisions (released entries).

The GIN indexes of the stored ``tsvector`` exist on PostgreSQL only; elsewhere the vector
column is NULL and search matches words instead.
"""

import json

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.contrib.postgres.search import SearchVectorField
from django.db import migrations, models
from django.db.models import F, Func, OuterRef, Subquery

BATCH = 2000


class SearchDocument(Func):
    """The stored ``tsvector`` of an entry, as claimsdb.models.search.SearchDocument made it
    when this migration was written: the title weighted A, the text weighted B, with the
    English configuration; NULL on other databases than PostgreSQL.

    A copy, so that the column this migration makes does not follow later edits of the
    model's expression (a change there needs a migration of its own). It deconstructs as
    the model's expression, which is what the migration state holds and what
    makemigrations compares with the model.
    """

    output_field = SearchVectorField()

    def __init__(self) -> None:
        super().__init__(F("title"), F("text"))

    def deconstruct(self):
        return "claimsdb.models.search.SearchDocument", (), {}

    def as_sql(self, compiler, connection, **extra):
        return "NULL", []

    def as_postgresql(self, compiler, connection, **extra):
        (title, title_params), (text, text_params) = (
            compiler.compile(expression) for expression in self.get_source_expressions()
        )
        config = "'english'::regconfig"
        sql = (
            f"setweight(to_tsvector({config}, COALESCE({title}, '')), 'A') || "
            f"setweight(to_tsvector({config}, COALESCE({text}, '')), 'B')"
        )
        return sql, [*title_params, *text_params]


class AddPostgresIndex(migrations.AddIndex):
    """``AddIndex`` for an index only PostgreSQL can build (GIN): recorded in the state on
    every database, created on PostgreSQL only."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


def _insert(SearchEntry, rows):
    """Insert ``rows`` (an iterable of dicts) in batches: memory bounded by ``BATCH``."""
    batch = []
    for row in rows:
        batch.append(SearchEntry(**row))
        if len(batch) >= BATCH:
            SearchEntry.objects.bulk_create(batch)
            batch = []
    if batch:
        SearchEntry.objects.bulk_create(batch)


def _working_rows(apps):
    Case = apps.get_model("claimsdb", "Case")
    Claim = apps.get_model("claimsdb", "Claim")
    Source = apps.get_model("claimsdb", "Source")
    for key, title, summary, status in (
        Case.objects.order_by("pk").values_list("key", "title", "summary", "status")
    ).iterator(chunk_size=BATCH):
        yield {
            "kind": "case",
            "key": key,
            "case_key": key,
            "status": status,
            "title": title,
            "text": summary,
        }
    for claim_id, case_key, statement, status in (
        Claim.objects.order_by("pk").values_list("claim_id", "case__key", "statement", "status")
    ).iterator(chunk_size=BATCH):
        yield {
            "kind": "claim",
            "key": claim_id,
            "case_key": case_key,
            "status": status,
            "text": statement,
        }
    for key, title, kind, status in (
        Source.objects.order_by("pk").values_list("key", "title", "kind", "status")
    ).iterator(chunk_size=BATCH):
        yield {"kind": "source", "key": key, "status": status, "source_kind": kind, "title": title}


def _released_rows(apps):
    """The latest released revision of every case and source, unless withdrawn."""
    ReleaseEntry = apps.get_model("claimsdb", "ReleaseEntry")
    for kind in ("case", "source"):
        latest = (
            ReleaseEntry.objects.filter(record_kind=kind, record_key=OuterRef("record_key"))
            .order_by("-release__number")
            .values("pk")[:1]
        )
        entries = ReleaseEntry.objects.filter(record_kind=kind, pk=Subquery(latest))
        for key, number, snapshot in (
            entries.order_by("pk")
            .values_list("record_key", "revision__number", "revision__snapshot")
            .iterator(chunk_size=BATCH)
        ):
            document = json.loads(snapshot)
            if document["status"] == "withdrawn":
                continue
            if kind == "source":
                yield {
                    "kind": "source",
                    "key": key,
                    "status": document["status"],
                    "source_kind": document["kind"],
                    "title": document["title"],
                    "revision": number,
                }
                continue
            yield {
                "kind": "case",
                "key": key,
                "case_key": key,
                "status": document["status"],
                "title": document["title"],
                "text": document["summary"],
                "revision": number,
            }
            for claim in document["claims"]:
                yield {
                    "kind": "claim",
                    "key": claim["id"],
                    "case_key": key,
                    "status": claim["status"],
                    "text": claim["statement"],
                    "revision": number,
                }


def fill_index(apps, schema_editor):
    SearchEntry = apps.get_model("claimsdb", "SearchEntry")
    _insert(SearchEntry, ({**row, "scope": "working"} for row in _working_rows(apps)))
    _insert(SearchEntry, ({**row, "scope": "released"} for row in _released_rows(apps)))


class Migration(migrations.Migration):
    dependencies = [
        ("claimsdb", "0007_release_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="SearchEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "scope",
                    models.CharField(
                        choices=[("working", "working state"), ("released", "released")],
                        max_length=8,
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[("case", "case"), ("claim", "claim"), ("source", "source")],
                        max_length=8,
                    ),
                ),
                ("key", models.CharField(max_length=80)),
                ("case_key", models.CharField(blank=True, max_length=80)),
                ("status", models.CharField(max_length=32)),
                ("source_kind", models.CharField(blank=True, max_length=32)),
                ("title", models.TextField(blank=True)),
                ("text", models.TextField(blank=True)),
                ("revision", models.PositiveBigIntegerField(blank=True, null=True)),
                (
                    "vector",
                    models.GeneratedField(
                        db_persist=True,
                        expression=SearchDocument(),
                        output_field=django.contrib.postgres.search.SearchVectorField(),
                    ),
                ),
            ],
            options={
                "ordering": ["scope", "kind", "key"],
                "indexes": [models.Index(fields=["scope", "case_key"], name="search_entry_case")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("scope", "key", "kind"), name="search_entry_unique"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("scope__in", ["working", "released"])),
                        name="search_scope_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("kind__in", ["case", "claim", "source"])),
                        name="search_kind_valid",
                    ),
                ],
            },
        ),
        AddPostgresIndex(
            model_name="searchentry",
            index=django.contrib.postgres.indexes.GinIndex(
                condition=models.Q(("scope", "working")),
                fields=["vector"],
                name="search_vector_working",
            ),
        ),
        AddPostgresIndex(
            model_name="searchentry",
            index=django.contrib.postgres.indexes.GinIndex(
                condition=models.Q(("scope", "released")),
                fields=["vector"],
                name="search_vector_released",
            ),
        ),
        migrations.RunPython(fill_index, migrations.RunPython.noop),
    ]
