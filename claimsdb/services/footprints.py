"""Read sets and footprints: how a write checked outside the ledger lock is validated under it.

A write on PostgreSQL reads and checks its change without the ledger lock, noting the
ledger head's number when it begins and the records its checks depended on (its *read
set*). Every write leaves, when it commits, a *footprint*: the records it changed and the
cases its scope check loaded or could affect, numbered with its last revision. Under the
lock, a write is valid if no footprint numbered after its starting number meets its read
set: nothing it read has changed since, and nothing it could affect was checked by a
write it did not see. docs/write-path.md, "The critical section", says why that suffices.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db import transaction
from django.db.models import Q

from claimsdb.models import LedgerHead, WriteFootprint

# A record as a read set and a footprint name it: (kind, key).
Record = tuple[str, str]

# Footprints are kept for this many revisions; a write that began longer ago than that is
# not validated but run again (it cannot tell what it missed).
WINDOW = 10_000
# A write whose footprint names more records than this (a bundle load, a batch of one)
# leaves one that names everything: every write running at its commit runs again.
MAX_RECORDS = 200
EVERYTHING: Record = ("*", "*")
# Old footprints are deleted after the commit of a write whose numbers cross a multiple of
# this, outside the lock.
PRUNE_EVERY = 1_000


def head_number() -> int:
    """The number of the last committed revision (0 for an empty ledger), without a lock."""
    return LedgerHead.objects.filter(pk=1).values_list("number", flat=True).first() or 0


def changed_since(number: int, records: Iterable[Record], *, head: int | None = None) -> bool:
    """Whether a write committed after revision ``number`` left a footprint on ``records``.

    ``head`` is the head's number now (read again when not given): a write that began
    before the footprints kept counts everything as changed. One query through the index
    on footprint numbers, which reads only the footprints of writes committed since.
    """
    if head is None:
        head = head_number()
    if head == number:
        return False
    if number < head - WINDOW:
        return True
    by_kind: dict[str, set[str]] = defaultdict(set)
    for kind, key in records:
        by_kind[kind].add(key)
    if not by_kind:
        return False
    condition = Q(record_kind=EVERYTHING[0])
    for kind, keys in by_kind.items():
        condition |= Q(record_kind=kind, record_key__in=sorted(keys))
    return WriteFootprint.objects.filter(condition, number__gt=number).exists()


def leave(number: int, records: Iterable[Record], *, first: int) -> None:
    """Record the footprint of a write whose revisions are ``first``…``number``, under
    the held ledger lock, and delete footprints older than the window once it commits."""
    records = set(records)
    if len(records) > MAX_RECORDS:
        records = {EVERYTHING}
    WriteFootprint.objects.bulk_create(
        [WriteFootprint(number=number, record_kind=kind, record_key=key) for kind, key in records]
    )
    if number // PRUNE_EVERY != (first - 1) // PRUNE_EVERY and number > WINDOW:
        transaction.on_commit(
            lambda: WriteFootprint.objects.filter(number__lte=number - WINDOW).delete()
        )
