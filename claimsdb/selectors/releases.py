"""Pages of a release's entries (docs/pagination.md)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from claimsdb.models import Release, ReleaseChange, ReleaseEntry


def release_entry_list(release: Release, *, changed: bool | None = None) -> QuerySet[ReleaseEntry]:
    """A release's entries in the order of its unique index (record kind, then key), each
    with its revision's number and no snapshot: the web and API pages of a release slice
    it. ``changed``: only the new, updated and withdrawn entries (True) or only the
    unchanged ones (False)."""
    entries = (
        ReleaseEntry.objects.filter(release=release)
        .select_related("revision")
        .defer("revision__snapshot")
        .order_by("record_kind", "record_key")
    )
    if changed is True:
        entries = entries.exclude(change=ReleaseChange.UNCHANGED)
    elif changed is False:
        entries = entries.filter(change=ReleaseChange.UNCHANGED)
    return entries


def with_previous_revisions(release: Release, entries: list[Any]) -> list[Any]:
    """Set ``previous_revision`` on a page of ``release_entry_list``: the revision number the
    release before published for the same record (None if it had none). One query."""
    previous = {
        (kind, key): number
        for kind, key, number in ReleaseEntry.objects.filter(
            release__number=release.number - 1,
            record_key__in={entry.record_key for entry in entries},
        ).values_list("record_kind", "record_key", "revision__number")
    }
    for entry in entries:
        entry.previous_revision = previous.get((entry.record_kind, entry.record_key))
    return entries
