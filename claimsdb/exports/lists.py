"""A filtered list as a CSV table (docs/exports.md, "A filtered list as CSV").

The case list of the site and the record lists of the API give, with the same filters, the
first table of their kind (``cases.csv``, ``sources.csv``…), read by key a batch at a time
(each batch starting after the last key of the one before) and written as it is read: the
released record for the public, the working state for readers of it, as the list shows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from claimsdb import choices, public
from claimsdb.models import AssessmentMethod, ReleaseEntry
from claimsdb.records import canonical
from claimsdb.records.kinds import record_kinds
from claimsdb.records.stream import BATCH_SIZE, keyset_batches

from .tables import Table, csv_lines, method_dimensions, tables_of


@dataclass(frozen=True)
class ListedRecord:
    """A record of a list, as a table row is made of it."""

    key: str
    document: dict[str, Any]
    revision: int
    withdrawn: bool


def list_table(kind: str) -> Table:
    """The table a list of ``kind`` gives: the kind's first (``cases``, ``sources``…)."""
    return tables_of(record_kinds.get(kind))[0]


# records read per batch; the tests make it small to count queries over several batches
LIST_BATCH_SIZE = BATCH_SIZE


def released_list_batches(
    entries: QuerySet[ReleaseEntry], *, batch_size: int | None = None
) -> Iterator[list[ListedRecord]]:
    """Released entries (a filtered ``public.ReleasedRecords``' own) by key, one query a
    batch."""
    batch_size = batch_size or LIST_BATCH_SIZE
    entries = entries.select_related("revision").only(
        "record_key", "withdrawn", "revision__number", "revision__snapshot"
    )
    for batch in keyset_batches(entries, field="record_key", batch_size=batch_size):
        yield [
            ListedRecord(
                entry.record_key,
                canonical.loads(entry.revision.snapshot),
                entry.revision.number,
                entry.withdrawn,
            )
            for entry in batch
        ]


def working_list_batches(
    kind: str, rows: QuerySet, *, batch_size: int | None = None
) -> Iterator[list[ListedRecord]]:
    """Live rows of ``kind`` annotated with their latest ``revision``
    (``access.visible_records``), by key; each batch's documents built together (the
    kind's builder: a fixed number of queries per batch)."""
    batch_size = batch_size or LIST_BATCH_SIZE
    entry = record_kinds.get(kind)
    for batch in keyset_batches(rows, field="key", batch_size=batch_size):
        yield [
            ListedRecord(
                row.key,
                document,
                row.revision,
                document.get("status") == choices.CaseStatus.WITHDRAWN,
            )
            for row, document in zip(batch, entry.documents(batch), strict=True)
        ]


def released_dimensions() -> list[str]:
    """The dimensions of the released assessment methods (methods are few: one query)."""
    return method_dimensions(document for _, document, _ in public.released_records("method")[:])


def working_dimensions() -> list[str]:
    """The dimensions of the live assessment methods (one query)."""
    return method_dimensions(
        {"key": key, "dimensions": dimensions}
        for key, dimensions in AssessmentMethod.objects.values_list("key", "dimensions")
    )


def list_csv(kind: str, batches: Iterator[list[ListedRecord]], *, released: bool) -> Iterator[str]:
    """The CSV text of a list of ``kind``, in pieces."""
    dimensions = released_dimensions() if released else working_dimensions()
    return csv_lines(list_table(kind), batches, dimensions)
