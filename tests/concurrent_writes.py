"""A writer landing between a service's read of a record and its write, on demand."""

from __future__ import annotations

from collections.abc import Callable

from django.db import connection

from claimsdb.models import Revision
from claimsdb.records import record_document
from claimsdb.services import case_update
from claimsdb.services import records as record_services

CASE = "CP22-003"


def latest(key: str = CASE) -> int:
    """The number of the case's latest revision."""
    return Revision.objects.filter(record_kind="case", record_key=key).latest("number").number


def meddle(monkeypatch, write: Callable[[int], None], *, times: int = 1) -> list[int]:
    """Make ``write(n)`` land right after each of the first ``times`` reads of a record's
    document by ``record_change``, between its read and its write (as another writer
    would); returns the list of reads, which grows by one per attempt."""
    reads: list[int] = []
    read = record_services.record_document
    depth = len(connection.atomic_blocks)

    def reading(kind: str, key: str):
        # the read happens in no transaction of the service's own: no lock is held
        assert len(connection.atomic_blocks) == depth
        document = read(kind, key)
        reads.append(len(reads))
        if len(reads) <= times:
            write(len(reads))
        return document

    monkeypatch.setattr(record_services, "record_document", reading)
    return reads


def limits_set_by(user, text: str) -> Callable[[int], None]:
    """A concurrent writer that sets the case's limits to ``text`` (numbered per write)."""

    def write(number: int) -> None:
        document = record_document("case", CASE)
        document["limits"] = f"{text} {number}"
        case_update(user=user, key=CASE, document=document, summary=f"{text} {number}")

    return write
