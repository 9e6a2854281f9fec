"""The data migrations run from an empty database over rows written as claimsdb wrote them
before those migrations existed, and fill what today's write path writes.

Each migration fills with its own frozen copy of the code it needs (never claimsdb's live
modules), so these tests hold the copies to the live code: a history is written through the
services, its rows are kept with the columns they had before 0007, the app is migrated to
zero and up to 0006, the rows go back in through 0006's historical models, and the
migrations after it must fill the released index (0007), the search index (0008) and each
revision's changed fields and date (0010) as the write path did. On SQLite and PostgreSQL
alike: the suite runs on both.
"""

from __future__ import annotations

import ast
import copy
from pathlib import Path
from typing import Any

import pytest
from django.apps.registry import Apps
from django.core.management.color import no_style
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

from claimsdb.models import (
    Figure,
    Release,
    ReleasedRevision,
    ReleasedTerm,
    ReleaseEntry,
    Revision,
    SearchEntry,
)
from claimsdb.records import record_document
from claimsdb.records.kinds import record_kinds
from claimsdb.services import (
    bundle_load,
    case_update,
    claim_add,
    claim_withdraw,
    revision_revert,
    source_withdraw,
)
from claimsdb.services.releases import release_publish

APP = "claimsdb"
MIGRATIONS = Path(__file__).resolve().parent.parent / "claimsdb" / "migrations"
BEFORE_DATA_MIGRATIONS = "0006_scope_lookup_indexes"  # the last before 0007
SEARCH_COLUMNS = (
    "scope",
    "kind",
    "key",
    "case_key",
    "status",
    "source_kind",
    "title",
    "text",
    "more",
    "revision",
)


def migrate(name: str | None) -> Apps:
    """Migrate claimsdb to the migration ``name`` (None: to nothing at all); the app
    registry of its models as they were there."""
    executor = MigrationExecutor(connection)
    executor.migrate([(APP, name)])
    return executor.loader.project_state((APP, name) if name else None).apps


def latest() -> str:
    (leaf,) = MigrationExecutor(connection).loader.graph.leaf_nodes(APP)
    return leaf[1]


@pytest.fixture
def at_latest_afterwards(transactional_db):
    """Whatever the test does to the schema, the tests after it find every migration
    applied (the database is flushed afterwards, as after every transactional test)."""
    yield
    migrate(latest())


@pytest.fixture
def seeded(db, reviewer, seed_bundle):
    """The seed as a database of 0006's time could hold it: without components and the
    cases' affected lists, which came with 0015 (the back-fills of 0007–0013 are frozen
    copies of code that knew nothing of them)."""
    bundle = copy.deepcopy(seed_bundle)
    bundle.pop("components", None)
    for case in bundle["cases"]:
        case.pop("affected", None)
    bundle_load(user=reviewer, bundle=bundle, summary="Seed")
    return seed_bundle


def write_history(reviewer, analyst) -> None:
    """Releases, edits, a withdrawn claim and source, a revert and an edit after the last
    release: every kind of revision and release entry the back-fills read."""
    release_publish(user=reviewer, notes="First")
    before_edit = Revision.objects.filter(record_kind="case", record_key="CP22-003").latest(
        "number"
    )
    document = record_document("case", "CP22-003")
    document["summary"] += " Revised."
    document["tags"].append("migrated")
    case_update(user=analyst, key="CP22-003", document=document, summary="Edit")
    claim = record_document("case", "CP22-002")["claims"][0]
    claim_add(
        user=analyst,
        case_key="CP22-002",
        claim={**claim, "id": "CLM-CP22-002-Z", "statement": "A second reading."},
        summary="Second claim",
    )
    claim_withdraw(
        user=analyst, claim_id="CLM-CP22-002-Z", summary="Withdrawn", reason="Superseded."
    )
    source_withdraw(user=analyst, key="SRC-SGLANG-PR-39229", summary="Withdrawn")
    release_publish(user=reviewer, notes="Second")
    revision_revert(user=reviewer, number=before_edit.number, summary="Back to the first")
    document = record_document("case", "CP22-002")
    document.update(status="draft", summary="Back to draft")
    case_update(user=analyst, key="CP22-002", document=document, summary="Draft")


def filled() -> dict[str, Any]:
    """What the data migrations fill, read through the live models."""
    return {
        "released revisions": sorted(ReleasedRevision.objects.values_list()),
        "released terms": sorted(
            ReleasedTerm.objects.values_list("revision_id", "name", "value", "number")
        ),
        "withdrawn entries": sorted(ReleaseEntry.objects.values_list("id", "withdrawn")),
        "change counts": sorted(Release.objects.values_list("number", "change_counts")),
        "search entries": sorted(SearchEntry.objects.values_list(*SEARCH_COLUMNS)),
        "revision changes": sorted(
            Revision.objects.values_list("number", "action", "changed", "dated_on")
        ),
        "key skeletons": sorted(
            (kind.name, *row)
            for kind in record_kinds
            for row in kind.model.objects.values_list("key", "key_skeleton")
        ),
        "figure skeletons": sorted(Figure.objects.values_list("figure_id", "id_skeleton")),
    }


def rows_as_of(apps: Apps) -> list[tuple[str, list[dict[str, Any]]]]:
    """Every row of claimsdb's tables, with the columns they had in ``apps``' state."""
    return [
        (
            model._meta.model_name,
            list(
                model.objects.order_by("pk").values(
                    *(field.attname for field in model._meta.concrete_fields)
                )
            ),
        )
        for model in apps.get_app_config(APP).get_models(include_auto_created=True)
    ]


def put_back(apps: Apps, tables: list[tuple[str, list[dict[str, Any]]]]) -> None:
    """Insert the rows through ``apps``' historical models, ids and all, in place of what
    the migrations made (the ledger head), as a database of that time held them."""
    models = [apps.get_model(APP, name) for name, _ in tables]
    with transaction.atomic():  # foreign keys are checked at commit
        for model, (_, rows) in zip(models, tables, strict=True):
            model.objects.all().delete()
            model.objects.bulk_create([model(**row) for row in rows])
        with connection.cursor() as cursor:
            for sql in connection.ops.sequence_reset_sql(no_style(), models):
                cursor.execute(sql)


def test_the_data_migrations_fill_from_old_rows_what_the_write_path_writes(
    at_latest_afterwards, seeded, reviewer, analyst
):
    write_history(reviewer, analyst)
    written = filled()
    assert any(withdrawn for _, withdrawn in written["withdrawn entries"])
    assert {"released", "working"} == {entry[0] for entry in written["search entries"]}
    assert any(changed for _, _, changed, _ in written["revision changes"])
    assert ("case", "CP22-003", "CP22-OO3") in written["key skeletons"]
    # 0010 dates the creations alone: the rows do not say which other revisions brought a
    # document in (a bundle load's updates), so it leaves those, reverts too, undated
    dated = {action for _, action, _, dated_on in written["revision changes"] if dated_on}
    assert dated == {"create", "revert"}
    written["revision changes"] = [
        (number, action, changed, dated_on if action == "create" else None)
        for number, action, changed, dated_on in written["revision changes"]
    ]

    old = MigrationExecutor(connection).loader.project_state((APP, BEFORE_DATA_MIGRATIONS))
    tables = rows_as_of(old.apps)
    counts = {name: len(rows) for name, rows in tables}
    assert counts["revision"] == len(written["revision changes"])
    assert counts["release"] == 2 and counts["releaseentry"] == len(written["withdrawn entries"])
    migrate(None)
    put_back(migrate(BEFORE_DATA_MIGRATIONS), tables)
    assert ReleasedRevision._meta.db_table not in connection.introspection.table_names()
    migrate(latest())

    migrated = filled()
    for name, rows in written.items():
        assert migrated[name] == rows, name


def test_the_search_vector_column_is_made_as_the_model_declares_it(db):
    """The last migration that makes the stored vector (0013, after 0008) does it with its
    own copy of the model's expression: the same SQL, on either database."""
    apps = MigrationExecutor(connection).loader.project_state((APP, latest())).apps
    migrated = apps.get_model(APP, "SearchEntry")._meta.get_field("vector")
    live = SearchEntry._meta.get_field("vector")
    assert type(migrated.expression).__module__ == f"{APP}.migrations.0013_search_more"
    assert migrated.generated_sql(connection) == live.generated_sql(connection)
    assert migrated.expression.deconstruct() == live.expression.deconstruct()


def test_no_migration_imports_claimsdb():
    """A migration reads the models of its own time (``apps.get_model``) and its own copies
    of any code: never claimsdb's live modules, which change after it is written."""
    for path in sorted(MIGRATIONS.glob("0*.py")):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add("." * node.level + (node.module or ""))
        assert not [name for name in imported if name.startswith((APP, "."))], path.name
