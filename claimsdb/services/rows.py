"""Inserting many rows at once, for the write path only (``services.apply``, the ledger).

Rows are built as plain tuples, in the order of the columns they name, not as model
instances: a bulk load writes tens of thousands of rows per batch, and building a model
instance per row cost more than writing it.

On PostgreSQL rows go in with a binary ``COPY``: each value is sent in its column type's
binary form, with no text to escape or parse (Django's ``bulk_create`` sends each column
as an array parameter, whose strings psycopg escapes one by one in Python, which made it
the largest cost of a bulk load). Elsewhere (SQLite) they go in with one ``executemany``
``INSERT``, each value through its field's own conversion (``get_db_prep_save``), as
``bulk_create`` would store it. Primary keys are not returned: callers that need them
take them from the table's sequence first (``reserve_ids``) or read them back by key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Field, Model

M = TypeVar("M", bound=Model)
# The binary COPY type of each kind of field: the column's own type, or one whose binary
# form the column reads (varchar reads text's).
_COPY_TYPES = {
    "AutoField": "int4",
    "BigAutoField": "int8",
    "BigIntegerField": "int8",
    "BooleanField": "bool",
    "CharField": "text",
    "DateField": "date",
    "DateTimeField": "timestamptz",
    "DecimalField": "numeric",
    "FloatField": "float8",
    "IntegerField": "int4",
    "JSONField": "jsonb",
    "PositiveBigIntegerField": "int8",
    "PositiveIntegerField": "int4",
    "PositiveSmallIntegerField": "int2",
    "SmallIntegerField": "int2",
    "TextField": "text",
}


def column(model: type[Model], name: str) -> str:
    """The database column of ``model``'s concrete field ``name``."""
    field = model._meta.get_field(name)
    assert isinstance(field, Field) and field.column, f"{name} is no column of {model}"
    return field.column


# Fields whose database value is the Python value itself (the schema has checked the type).
_PLAIN = frozenset(
    {
        "BigAutoField",
        "BigIntegerField",
        "BooleanField",
        "CharField",
        "IntegerField",
        "PositiveBigIntegerField",
        "PositiveIntegerField",
        "SmallIntegerField",
        "TextField",
    }
)


# Whether PostgreSQL takes rows by binary COPY (tests turn it off to compare the two ways).
BINARY_COPY = True


def _internal_type(field: Field) -> str:
    """The field's type, or for a foreign key the type of the column it points at."""
    while field.is_relation:
        field = field.target_field  # type: ignore[attr-defined]  # a relation's target
    return field.get_internal_type()


def insert_tuples(model: type[Model], columns: Sequence[str], rows: Iterable[tuple]) -> int:
    """Insert ``rows``, tuples of values of the fields ``columns`` (field names: ``case``
    for a foreign key takes the primary key of the case, as ``case_id`` does). Returns
    the number of rows."""
    rows = rows if isinstance(rows, list) else list(rows)
    if not rows:
        return 0
    fields = [model._meta.get_field(name) for name in columns]
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    names = ", ".join(quote(column(model, name)) for name in columns)
    if connection.vendor == "postgresql" and BINARY_COPY:
        types = [_COPY_TYPES.get(_internal_type(field)) for field in fields]  # type: ignore[arg-type]
        if None not in types:
            with (
                connection.cursor() as cursor,
                cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN (FORMAT BINARY)") as copy,
            ):
                copy.set_types(types)
                for row in rows:
                    copy.write_row(row)
            return len(rows)
    converters = [_converter(field) for field in fields]  # type: ignore[arg-type]
    if any(converters):
        rows = [
            tuple(
                value if convert is None else convert(value)
                for convert, value in zip(converters, row, strict=True)
            )
            for row in rows
        ]
    marks = ", ".join(["%s"] * len(fields))
    with connection.cursor() as cursor:
        cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)
    return len(rows)


def _converter(field: Field) -> Callable[[Any], Any] | None:
    if _internal_type(field) in _PLAIN:
        return None
    if field.is_relation:
        field = field.target_field  # type: ignore[attr-defined]  # a relation's target
    return lambda value: field.get_db_prep_save(value, connection)


def reserve_ids(model: type[Model], count: int) -> list[int] | None:
    """``count`` primary keys taken from the table's sequence (PostgreSQL), so that rows
    pointing at the rows about to be inserted can be built before they are read back;
    None elsewhere."""
    if connection.vendor != "postgresql" or not count:
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [model._meta.db_table, model._meta.pk.column, count],
        )
        return [pk for (pk,) in cursor.fetchall()]


# A few rows (the revisions of one edit) go in with an INSERT that returns their primary
# keys, which costs one round trip where a COPY and reading the keys back cost two.
RETURNING_UP_TO = 16


def insert_rows(model: type[Model], objects: Iterable[Model]) -> list[Model]:
    """Insert unsaved model instances (their non-generated fields, as ``pre_save`` gives
    them); returns them, with primary keys unless more than ``RETURNING_UP_TO`` were
    copied into PostgreSQL."""
    objects = list(objects)
    if connection.vendor != "postgresql" or len(objects) <= RETURNING_UP_TO:
        # one INSERT … RETURNING: the rows and their primary keys in one round trip
        return model._default_manager.bulk_create(objects)
    fields = [f for f in model._meta.concrete_fields if not f.primary_key and not f.generated]
    insert_tuples(
        model,
        [f.name for f in fields],
        [tuple(f.pre_save(obj, True) for f in fields) for obj in objects],
    )
    return objects
