"""Batched reads of the write path: many records' documents and latest revisions at once.

Each function costs a fixed number of queries however many keys it is given, so a write of
500 records reads as much as a write of one, per query.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from django.db.models import Max

from claimsdb.models import Revision
from claimsdb.records import loads
from claimsdb.records.kinds import record_kinds


def record_documents(kind: str, keys: Collection[str]) -> dict[str, dict[str, Any]]:
    """The live documents of the records of one kind that exist among ``keys``."""
    return record_kinds.get(kind).read(keys)


def latest_revisions(kind: str, keys: Collection[str]) -> dict[str, Revision]:
    """The latest revision of each record that has one, without its snapshot text.

    One query on the (record_kind, record_key, number) index: the newest number of each
    record, then those rows. Callers compare snapshots by their SHA-256.
    """
    if not keys:
        return {}
    latest = (
        Revision.objects.filter(record_kind=kind, record_key__in=set(keys))
        .values("record_key")
        .annotate(latest=Max("number"))
        .values("latest")
    )
    return {
        revision.record_key: revision
        for revision in Revision.objects.filter(number__in=latest).defer("snapshot")
    }


def revision_snapshots(revisions: Iterable[Revision]) -> dict[str, dict[str, Any]]:
    """The documents the given revisions snapshot, by record key. One query, none if there
    are no revisions."""
    pks = [revision.pk for revision in revisions]
    if not pks:
        return {}
    rows = Revision.objects.filter(pk__in=pks).values_list("record_key", "snapshot")
    return {key: loads(snapshot) for key, snapshot in rows}
