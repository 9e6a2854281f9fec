"""Search finds tags, figure IDs, a case's account and basis, a source's publisher and the
parts of keys (docs/search.md): a ``more`` column of search entries, weighted C in the
stored ``tsvector``, and every entry made again with it.

The stored generated column cannot change its expression in place: the vector and its GIN
indexes (PostgreSQL only) are dropped and made again with the new expression.
"""

import json

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.contrib.postgres.search import SearchVectorField
from django.db import migrations, models
from django.db.models import F, Func, OuterRef, Subquery

BATCH = 2000
SEPARATOR = "\x1f"


class SearchDocument(Func):
    """The stored ``tsvector`` of an entry as claimsdb.models.search.SearchDocument made it
    when this migration was written: title A, text B, more C, English configuration; NULL
    elsewhere than on PostgreSQL. A copy, deconstructing as the model's expression (see
    0008_search_index)."""

    output_field = SearchVectorField()

    def __init__(self) -> None:
        super().__init__(F("title"), F("text"), F("more"))

    def deconstruct(self):
        return "claimsdb.models.search.SearchDocument", (), {}

    def as_sql(self, compiler, connection, **extra):
        return "NULL", []

    def as_postgresql(self, compiler, connection, **extra):
        (title, title_params), (text, text_params), (more, more_params) = (
            compiler.compile(expression) for expression in self.get_source_expressions()
        )
        config = "'english'::regconfig"
        sql = (
            f"setweight(to_tsvector({config}, COALESCE({title}, '')), 'A') || "
            f"setweight(to_tsvector({config}, COALESCE({text}, '')), 'B') || "
            f"setweight(to_tsvector({config}, COALESCE({more}, '')), 'C')"
        )
        return sql, [*title_params, *text_params, *more_params]


class PostgresIndex:
    """Index operations for an index only PostgreSQL builds (GIN): in the state on every
    database, in the database on PostgreSQL only."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


class AddPostgresIndex(PostgresIndex, migrations.AddIndex):
    pass


class RemovePostgresIndex(PostgresIndex, migrations.RemoveIndex):
    pass


def key_words(key):
    return f"{key} {' '.join(key.split('-'))}"


def case_more(tags, figure_ids, account, basis):
    return SEPARATOR.join(
        [", ".join(tags), " ".join(key_words(f) for f in figure_ids), account or "", basis or ""]
    )


def source_more(publisher, key):
    return SEPARATOR.join([publisher or "", key_words(key)])


def _save(SearchEntry, scope, updates):
    """Set ``more`` of the entries of ``scope``: ``updates`` yields (kind, key, more)."""
    batch = []

    def flush():
        entries = {
            (e.kind, e.key): e
            for e in SearchEntry.objects.filter(scope=scope, key__in=[key for _, key, _ in batch])
        }
        changed = []
        for kind, key, more in batch:
            entry = entries.get((kind, key))
            if entry is not None:
                entry.more = more
                changed.append(entry)
        SearchEntry.objects.bulk_update(changed, ["more"])

    for update in updates:
        batch.append(update)
        if len(batch) >= BATCH:
            flush()
            batch = []
    if batch:
        flush()


def _working(apps):
    Case = apps.get_model("claimsdb", "Case")
    CaseTag = apps.get_model("claimsdb", "CaseTag")
    Figure = apps.get_model("claimsdb", "Figure")
    Source = apps.get_model("claimsdb", "Source")
    cases = Case.objects.order_by("pk").values_list("pk", "key", "account", "basis")
    chunk = []

    def emit(rows):
        pks = [pk for pk, *_ in rows]
        tags, figures = {}, {}
        for case_id, name in (
            CaseTag.objects.filter(case_id__in=pks).order_by("name").values_list("case_id", "name")
        ):
            tags.setdefault(case_id, []).append(name)
        for case_id, figure_id in (
            Figure.objects.filter(case_id__in=pks)
            .order_by("position")
            .values_list("case_id", "figure_id")
        ):
            figures.setdefault(case_id, []).append(figure_id)
        for pk, key, account, basis in rows:
            yield "case", key, case_more(tags.get(pk, []), figures.get(pk, []), account, basis)

    for row in cases.iterator(chunk_size=BATCH):
        chunk.append(row)
        if len(chunk) >= BATCH:
            yield from emit(chunk)
            chunk = []
    if chunk:
        yield from emit(chunk)
    for key, publisher in (
        Source.objects.order_by("pk").values_list("key", "publisher").iterator(chunk_size=BATCH)
    ):
        yield "source", key, source_more(publisher, key)


def _released(apps):
    """The latest released revision of every case and source, as 0008_search_index."""
    ReleaseEntry = apps.get_model("claimsdb", "ReleaseEntry")
    for kind in ("case", "source"):
        latest = (
            ReleaseEntry.objects.filter(record_kind=kind, record_key=OuterRef("record_key"))
            .order_by("-release__number")
            .values("pk")[:1]
        )
        entries = ReleaseEntry.objects.filter(record_kind=kind, pk=Subquery(latest))
        for key, snapshot in (
            entries.order_by("pk")
            .values_list("record_key", "revision__snapshot")
            .iterator(chunk_size=BATCH)
        ):
            document = json.loads(snapshot)
            if kind == "source":
                yield "source", key, source_more(document.get("publisher", ""), key)
            else:
                yield (
                    "case",
                    key,
                    case_more(
                        document.get("tags", []),
                        [f["id"] for f in document.get("figures", [])],
                        document.get("account", ""),
                        document.get("basis", ""),
                    ),
                )


def fill_more(apps, schema_editor):
    SearchEntry = apps.get_model("claimsdb", "SearchEntry")
    _save(SearchEntry, "working", _working(apps))
    _save(SearchEntry, "released", _released(apps))


class Migration(migrations.Migration):
    dependencies = [
        ("claimsdb", "0012_form_drafts"),
    ]

    operations = [
        RemovePostgresIndex(model_name="searchentry", name="search_vector_working"),
        RemovePostgresIndex(model_name="searchentry", name="search_vector_released"),
        migrations.RemoveField(model_name="searchentry", name="vector"),
        migrations.AddField(
            model_name="searchentry",
            name="more",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.RunPython(fill_more, migrations.RunPython.noop),
        migrations.AddField(
            model_name="searchentry",
            name="vector",
            field=models.GeneratedField(
                db_persist=True,
                expression=SearchDocument(),
                output_field=django.contrib.postgres.search.SearchVectorField(),
            ),
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
    ]
