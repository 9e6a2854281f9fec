"""The revision ledger: gapless global numbers, snapshots, a hash chain.

docs/architecture.md, "The ledger", describes it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from claimsdb.models import LedgerHead, Revision
from claimsdb.records import dumps_compact, record_date, sha256_text

from .review_queue import revisions_written
from .rows import insert_rows

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
    return row_chain_hash(
        previous_hash,
        number,
        record_kind,
        record_key,
        action,
        material,
        summary,
        author_id,
        created_at,
        snapshot_sha256,
    )


def row_chain_hash(
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
    /,
) -> str:
    """``chain_hash`` from positional arguments, in the order of the ledger's columns:
    the form ``verify_history`` calls for every revision. The one definition of the
    hash: SHA-256 of the compact JSON of these ten fields, in this order."""
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


class RevisionChain:
    """Revisions of one change, numbered and chained in Python under the held head lock,
    then inserted with one statement per batch and the head advanced once (``save``)."""

    def __init__(self, head: LedgerHead, *, author: User, summary: str, material: bool):
        self.head = head
        self.author = author
        self.summary = summary
        self.material = material
        self.revisions: list[Revision] = []

    def add(
        self,
        record_kind: str,
        record_key: str,
        action: str,
        snapshot: str,
        *,
        summary: str = "",
        changed: list[str] | None = None,
        dated_on: dt.date | None = None,
    ) -> Revision:
        """Number and chain the next revision; ``snapshot`` is the compact document,
        ``changed`` the fields changed since the record's previous revision and
        ``dated_on`` the date the document gives its record (``records.changed_fields``,
        ``records.record_date``: stored beside the chain, not hashed)."""
        summary = summary or self.summary
        snapshot_sha256 = sha256_text(snapshot)
        number = self.head.number + 1
        # Stored and hashed at microsecond precision, which both databases keep exactly.
        created_at = timezone.now().astimezone(dt.UTC)
        digest = chain_hash(
            previous_hash=self.head.chain_hash,
            number=number,
            record_kind=record_kind,
            record_key=record_key,
            action=action,
            material=self.material,
            summary=summary,
            author_id=self.author.pk,
            created_at=created_at,
            snapshot_sha256=snapshot_sha256,
        )
        revision = Revision(
            number=number,
            record_kind=record_kind,
            record_key=record_key,
            action=action,
            material=self.material,
            summary=summary,
            author=self.author,
            created_at=created_at,
            snapshot=snapshot,
            snapshot_sha256=snapshot_sha256,
            previous_hash=self.head.chain_hash,
            chain_hash=digest,
            changed=changed or [],
            dated_on=dated_on,
        )
        self.revisions.append(revision)
        self.head.number = number
        self.head.chain_hash = digest
        return revision

    def save(self) -> None:
        """Insert the revisions added since the last save and advance the head."""
        if not self.revisions:
            return
        insert_rows(Revision, self.revisions)
        if any(revision.pk is None for revision in self.revisions):
            pks = dict(
                Revision.objects.filter(
                    number__in=[revision.number for revision in self.revisions]
                ).values_list("number", "pk")
            )
            for revision in self.revisions:
                revision.pk = pks[revision.number]
        # the review queue follows the ledger in the same transaction (docs/review.md)
        revisions_written(self.revisions)
        self.revisions = []
        self.head.save(update_fields=["number", "chain_hash"])


def append_revision(
    *,
    head: LedgerHead,
    record_kind: str,
    record_key: str,
    action: str,
    material: bool,
    summary: str,
    author: User,
    document: dict[str, Any],
) -> Revision:
    """Append one revision under the already-held head lock and advance the head."""
    chain = RevisionChain(head, author=author, summary=summary, material=material)
    revision = chain.add(
        record_kind,
        record_key,
        action,
        dumps_compact(document),
        dated_on=record_date(record_kind, document) if action == "create" else None,
    )
    chain.save()
    return revision
