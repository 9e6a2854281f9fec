"""Inserting many rows at once, for the write path only (``services.apply``, the ledger).

On PostgreSQL rows go in with ``COPY``: Django's ``bulk_create`` sends each column as an
array parameter, whose strings psycopg escapes one by one in Python, which made it the
largest cost of a bulk load. Elsewhere ``bulk_create`` is used. Either way the rows pass
through each field's own conversion (``get_db_prep_save``), so what is stored is what
``bulk_create`` would store; primary keys are not returned (callers that need them read
them back by key).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection
from django.db.models import Model


def insert_rows(model: type[Model], objects: Iterable[Model]) -> list[Model]:
    """Insert unsaved model instances; returns them (without primary keys on PostgreSQL)."""
    objects = list(objects)
    if not objects:
        return objects
    if connection.vendor != "postgresql":
        return model.objects.bulk_create(objects)
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    quote = connection.ops.quote_name
    statement = "COPY {} ({}) FROM STDIN".format(
        quote(model._meta.db_table), ", ".join(quote(f.column) for f in fields)
    )
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for obj in objects:
            copy.write_row([f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields])
    return objects
