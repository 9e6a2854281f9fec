"""The revision ledger (DESIGN.md §4): gapless global numbers, snapshots, a hash chain."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from claimsdb.models import LedgerHead, Revision
from claimsdb.records import dumps_compact, sha256_text

GENESIS_HASH = "0" * 64


def lock_head() -> LedgerHead:
    """Lock the ledger head for the rest of the transaction.

    Every writer takes this lock first, so revision numbers are assigned one at a time
    and stale-revision checks made after it cannot race another writer.
    """
    assert transaction.get_connection().in_atomic_block, "lock_head() needs a transaction"
    head = LedgerHead.objects.select_for_update().filter(pk=1).first()
    if head is None:
        try:
            with transaction.atomic():
                LedgerHead.objects.create(pk=1)
        except IntegrityError:
            pass  # another writer created it first
        head = LedgerHead.objects.select_for_update().get(pk=1)
    return head


def format_time(moment: dt.datetime) -> str:
    """UTC RFC 3339 with ``Z``, microseconds included: the form that is hashed."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def chain_hash(
    *,
    previous_hash: str,
    number: int,
    record_kind: str,
    record_key: str,
    action: str,
    material: bool,
    summary: str,
    author_id: int,
    created_at: dt.datetime,
    snapshot_sha256: str,
) -> str:
    """The hash that links a revision to the one before it; covers all its metadata."""
    fields = [
        previous_hash,
        str(number),
        record_kind,
        record_key,
        action,
        "material" if material else "editorial",
        summary,
        str(author_id),
        format_time(created_at),
        snapshot_sha256,
    ]
    return sha256_text(dumps_compact(fields))


def latest_revision(record_kind: str, record_key: str) -> Revision | None:
    return (
        Revision.objects.filter(record_kind=record_kind, record_key=record_key)
        .order_by("-number")
        .first()
    )


def append_revision(
    *,
    head: LedgerHead,
    record_kind: str,
    record_key: str,
    action: str,
    material: bool,
    summary: str,
    author: AbstractBaseUser,
    document: dict[str, Any],
) -> Revision:
    """Append one revision under the already-held head lock and advance the head."""
    snapshot = dumps_compact(document)
    snapshot_sha256 = sha256_text(snapshot)
    number = head.number + 1
    # Stored and hashed at microsecond precision, which both databases keep exactly.
    created_at = timezone.now().astimezone(dt.UTC)
    digest = chain_hash(
        previous_hash=head.chain_hash,
        number=number,
        record_kind=record_kind,
        record_key=record_key,
        action=action,
        material=material,
        summary=summary,
        author_id=author.pk,
        created_at=created_at,
        snapshot_sha256=snapshot_sha256,
    )
    revision = Revision.objects.create(
        number=number,
        record_kind=record_kind,
        record_key=record_key,
        action=action,
        material=material,
        summary=summary,
        author=author,
        created_at=created_at,
        snapshot=snapshot,
        snapshot_sha256=snapshot_sha256,
        previous_hash=head.chain_hash,
        chain_hash=digest,
    )
    head.number = number
    head.chain_hash = digest
    head.save(update_fields=["number", "chain_hash"])
    return revision
