"""Inserting many rows at once, for the write path only (``services.apply``, the ledger).

On PostgreSQL rows go in with ``COPY``: Django's ``bulk_create`` sends each column as an
array parameter, whose strings psycopg escapes one by one in Python, which made it the
largest cost of a bulk load. Elsewhere ``bulk_create`` is used. Either way the rows pass
through each field's own conversion (``get_db_prep_save``), so what is stored is what
``bulk_create`` would store; primary keys are not returned (callers that need them read
them back by key).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Field, Model

M = TypeVar("M", bound=Model)


def column(model: type[Model], name: str) -> str:
    """The database column of ``model``'s concrete field ``name``."""
    field = model._meta.get_field(name)
    assert isinstance(field, Field) and field.column, f"{name} is no column of {model}"
    return field.column


def insert_rows(model: type[M], objects: Iterable[M]) -> list[M]:
    """Insert unsaved model instances; returns them (without primary keys on PostgreSQL)."""
    objects = list(objects)
    if not objects:
        return objects
    if connection.vendor != "postgresql":
        return model._default_manager.bulk_create(objects)
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    quote = connection.ops.quote_name
    statement = "COPY {} ({}) FROM STDIN".format(
        quote(model._meta.db_table), ", ".join(quote(f.column) for f in fields)
    )
    values = [_converter(f) for f in fields]
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for obj in objects:
            copy.write_row([value(obj) for value in values])
    return objects


# Fields whose database value is the attribute itself (the schema has checked the type).
_PLAIN = frozenset(
    {
        "BigIntegerField",
        "BooleanField",
        "CharField",
        "ForeignKey",
        "IntegerField",
        "PositiveBigIntegerField",
        "PositiveIntegerField",
        "SmallIntegerField",
        "TextField",
    }
)


def _converter(field: Field) -> Callable[[Model], Any]:
    if field.get_internal_type() in _PLAIN:
        return attrgetter(field.attname)
    return lambda obj: field.get_db_prep_save(field.pre_save(obj, True), connection)
