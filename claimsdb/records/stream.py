"""Reading every record in batches: keyset pagination, and the progress hook of commands.

Whatever reads the whole knowledge base (exports, ``verify_history``, ``check_rules``)
reads it here, one batch at a time, so its memory follows the batch size and its queries
follow the number of batches — never the size of the knowledge base held at once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar

from django.db import connections
from django.db.models import F, Field, Model, QuerySet
from django.db.models.functions import Collate

from .kinds import record_kinds

BATCH_SIZE = 500

M = TypeVar("M", bound=Model)


class Progress(Protocol):
    """What a long read reports: a phase with a total (asked for only if shown), then
    how many items each batch finished."""

    def begin(self, label: str, total: Callable[[], int]) -> None: ...

    def advance(self, count: int) -> None: ...

    def pause(self) -> None:
        """Make way for other output on the same stream; the next ``advance`` resumes."""

    def end(self) -> None: ...


class NoProgress:
    """Reports nothing, and never counts the total (no extra query)."""

    def begin(self, label: str, total: Callable[[], int]) -> None:
        pass

    def advance(self, count: int) -> None:
        pass

    def pause(self) -> None:
        pass

    def end(self) -> None:
        pass


NO_PROGRESS = NoProgress()


def orders_bytewise(queryset: QuerySet) -> bool:
    """Whether the database orders record keys as Python compares them (code point order).

    Bundle lists are sorted by key in code point order. SQLite compares text that way;
    PostgreSQL does under the ``C`` collations (``C``, ``C.UTF-8``, ``POSIX``). Under a
    language collation (``en_US.UTF-8`` ignores hyphens at first), the key order is asked
    for explicitly with ``COLLATE "C"``, which is right but cannot use the key index.
    """
    connection = connections[queryset.db]
    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cursor:
        cursor.execute("SELECT datcollate FROM pg_database WHERE datname = current_database()")
        row = cursor.fetchone()
    collation = (row[0] if row else "") or ""
    return collation in {"C", "POSIX"} or collation.startswith("C.")


def keyset_batches(
    queryset: QuerySet[M], *, field: str = "key", batch_size: int = BATCH_SIZE
) -> Iterator[list[M]]:
    """``queryset`` in ``field`` order, ``batch_size`` rows at a time: each batch is one
    query (plus the queryset's prefetches) that starts after the last value seen, so a
    batch costs the same at the end of a large table as at its start."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    order: Any = field
    model_field = queryset.model._meta.get_field(field)
    text = isinstance(model_field, Field) and model_field.get_internal_type() in {
        "CharField",
        "TextField",
    }
    if text and not orders_bytewise(queryset):
        queryset = queryset.annotate(bytewise_key=Collate(F(field), "C"))
        order = "bytewise_key"
    queryset = queryset.order_by(order)
    last = None
    while True:
        page = queryset if last is None else queryset.filter(**{f"{order}__gt": last})
        batch = list(page[:batch_size])
        if batch:
            yield batch
        if len(batch) < batch_size:
            return
        last = getattr(batch[-1], order)


def document_batches(kind: str, *, batch_size: int = BATCH_SIZE) -> Iterator[list[dict[str, Any]]]:
    """The live documents of every record of ``kind``, by key, a batch at a time.

    A batch is a fixed number of queries (for cases, the case rows and one per table of
    their contents, see ``records/batched.py``), whatever the batch's records hold.
    """
    entry = record_kinds.get(kind)
    for rows in keyset_batches(entry.rows(), batch_size=batch_size):
        yield entry.documents(rows)


def record_count(kind: str) -> int:
    return record_kinds.get(kind).model._default_manager.count()


def in_key_order(batches: Iterable[list[dict[str, Any]]]) -> Iterator[list[dict[str, Any]]]:
    """Pass batches of documents through, refusing to go on if keys ever fail to increase:
    a bundle's lists are sorted by key, and a streamed list cannot be sorted afterwards."""
    previous: str | None = None
    for batch in batches:
        for document in batch:
            if previous is not None and not document["key"] > previous:
                raise RuntimeError(
                    f"records came out of key order ({document['key']} after {previous}); "
                    "the bundle would not be sorted"
                )
            previous = document["key"]
        yield batch


def live_bundle_lists(
    *, batch_size: int = BATCH_SIZE, progress: Progress = NO_PROGRESS
) -> dict[str, Iterator[dict[str, Any]]]:
    """The lists of the working-state bundle as lazy streams of documents, by key: each
    list is read (and reported to ``progress``) only when it is consumed."""
    return {
        kind.plural: reported_documents(
            kind.plural,
            functools.partial(record_count, kind.name),
            in_key_order(document_batches(kind.name, batch_size=batch_size)),
            progress,
        )
        for kind in record_kinds.in_bundle_file_order()
    }


def reported_documents(
    label: str,
    total: Callable[[], int],
    batches: Iterable[list[dict[str, Any]]],
    progress: Progress,
) -> Iterator[dict[str, Any]]:
    """The documents of ``batches`` one by one, telling ``progress`` after each batch."""
    progress.begin(label, total)
    for batch in batches:
        yield from batch
        progress.advance(len(batch))
    progress.end()


def reported_batches(
    label: str, total: Callable[[], int], batches: Iterable[list[M]], progress: Progress
) -> Iterator[list[M]]:
    """``batches``, telling ``progress`` about each one as it is handed on."""
    progress.begin(label, total)
    for batch in batches:
        yield batch
        progress.advance(len(batch))
    progress.end()


def utf8_chunks(pieces: Iterable[str], size: int = 64 * 1024) -> Iterator[bytes]:
    """Text pieces gathered into UTF-8 chunks of about ``size`` characters: a streamed
    response sends a few large writes rather than one per document."""
    buffer: list[str] = []
    length = 0
    for piece in pieces:
        buffer.append(piece)
        length += len(piece)
        if length >= size:
            yield "".join(buffer).encode("utf-8")
            buffer.clear()
            length = 0
    if buffer:
        yield "".join(buffer).encode("utf-8")
