"""A release's records a batch at a time, with what the exports date them by.

The exports of a release (STIX, CSV; docs/exports.md) read every entry of the release, kind
by kind in key order, from the ledger's snapshots, as ``export_records --release`` does. A
batch is two queries whatever its records hold: the entries with their revisions'
snapshots, and the time of each record's first revision. Nothing here reads the clock or
the live tables, so the same release reads the same on any database at any time.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db.models import Min

from claimsdb.models import Release, ReleaseEntry, Revision
from claimsdb.records import canonical
from claimsdb.records.stream import BATCH_SIZE, keyset_batches


@dataclass(frozen=True)
class ReleasedVersion:
    """One record as a release published it."""

    kind: str
    key: str
    document: dict[str, Any]
    # the revision the release published, and its time: the version's ``modified``
    revision: int
    modified: dt.datetime
    # the time of the record's first revision: its ``created``
    created: dt.datetime
    # the release publishes it as withdrawn
    withdrawn: bool


def release_version_batches(
    release: Release, kind: str, *, batch_size: int = BATCH_SIZE
) -> Iterator[list[ReleasedVersion]]:
    """Every record of ``kind`` in ``release`` (withdrawn ones too), by key, ``batch_size``
    at a time."""
    entries = (
        ReleaseEntry.objects.filter(release=release, record_kind=kind)
        .select_related("revision")
        .only(
            "record_key",
            "withdrawn",
            "revision__number",
            "revision__created_at",
            "revision__snapshot",
        )
    )
    for batch in keyset_batches(entries, field="record_key", batch_size=batch_size):
        keys = [entry.record_key for entry in batch]
        # along the (record_kind, record_key, number) index of the ledger
        firsts = dict(
            Revision.objects.filter(record_kind=kind, record_key__in=keys)
            .values("record_key")
            .annotate(first=Min("created_at"))
            .values_list("record_key", "first")
        )
        versions = []
        for entry in batch:
            modified = utc(entry.revision.created_at)
            first = utc(firsts.get(entry.record_key, modified))
            versions.append(
                ReleasedVersion(
                    kind=kind,
                    key=entry.record_key,
                    document=canonical.loads(entry.revision.snapshot),
                    revision=entry.revision.number,
                    modified=modified,
                    # never after ``modified`` (STIX refuses that), were the clock ever set back
                    created=min(first, modified),
                    withdrawn=entry.withdrawn,
                )
            )
        yield versions


def release_count(release: Release, kind: str) -> Callable[[], int]:
    """How many records of ``kind`` the release has (for a progress line; asked lazily)."""
    return ReleaseEntry.objects.filter(release=release, record_kind=kind).count


def utc(moment: dt.datetime) -> dt.datetime:
    """A stored time in UTC, whatever time zone the database connection gave it in."""
    return moment.astimezone(dt.UTC)
