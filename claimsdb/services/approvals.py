"""Approvals: a reviewer's "revision n of this record is reviewed" (docs/review.md).

An approval of revision ``n`` covers every revision of the record since its previous
approved revision; releases publish each record's latest approved revision
(``services/releases.py``). Four eyes (``settings.FOUR_EYES``, on by default): a reviewer
may not approve a range holding a revision they wrote. With it off, such an approval is
recorded as self-approved.

Approvals form a hash chain of their own (``approval_chain_hash``), numbered without gaps,
whose head is kept on the ledger head and advanced under its lock: an approval is checked
against the record's latest revision with no write able to land in between, and
``verify_history`` catches an approval edited, inserted or deleted.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from claimsdb.codes import ApprovalCode
from claimsdb.models import Approval, LedgerHead, Revision
from claimsdb.records import (
    RecordNotFound,
    RuleViolation,
    RuleViolations,
    StaleApproval,
    dumps_compact,
    sha256_text,
)
from claimsdb.records.kinds import record_kinds
from claimsdb.webhooks.events import emit_approvals

from .ledger import GENESIS_HASH, format_time, lock_head
from .permissions import require_role
from .review_queue import records_approved

__all__ = [
    "GENESIS_HASH",
    "PendingOutcome",
    "approval_chain_hash",
    "approve",
    "approve_pending",
]


def approval_chain_hash(
    previous_hash: str,
    number: int,
    record_kind: str,
    record_key: str,
    revision_number: int,
    revision_hash: str,
    since_number: int | None,
    reviewer_id: int,
    created_at: dt.datetime,
    note: str,
    self_approved: bool,
    status: str,
    /,
) -> str:
    """The hash linking an approval to the one before it: SHA-256 of the compact JSON of
    these twelve fields, in this order. ``revision_hash`` is the approved revision's chain
    hash, so the approval stays bound to that revision's content."""
    fields = [
        previous_hash,
        str(number),
        record_kind,
        record_key,
        str(revision_number),
        revision_hash,
        "" if since_number is None else str(since_number),
        str(reviewer_id),
        format_time(created_at),
        note,
        "self-approved" if self_approved else "reviewed",
        status,
    ]
    return sha256_text(dumps_compact(fields))


def approve(
    *,
    user: User,
    record_kind: str,
    record_key: str,
    revision_number: int,
    note: str = "",
) -> Approval:
    """Approve revision ``revision_number`` of a record, covering every revision since the
    record's previous approved one.

    Refused, with nothing written: without the reviewer role (``PermissionDenied``,
    ``permission.denied``); for a record without revisions (``RecordNotFound``); when the
    revision is not the record's latest (``StaleApproval``, ``approval.stale``); when it is
    approved already (``approval.already_approved``); with four eyes on, when the range
    holds a revision the reviewer wrote (``approval.own_change``).
    """
    if record_kind not in record_kinds:
        raise RecordNotFound(record_kind, record_key)
    note = (note or "").strip()
    with transaction.atomic():
        head = lock_head()
        require_role(user, "reviewer", "approving a revision")
        latest = (
            Revision.objects.filter(record_kind=record_kind, record_key=record_key)
            .order_by("-number")
            .first()
        )
        if latest is None:
            raise RecordNotFound(record_kind, record_key)
        label = f"{record_kind} {record_key}"
        if revision_number != latest.number:
            raise StaleApproval(record=label, expected=revision_number, current=latest.number)
        since = Approval.objects.filter(record_kind=record_kind, record_key=record_key).aggregate(
            last=Max("revision_number")
        )["last"]
        if since is not None and since >= latest.number:
            raise RuleViolations(
                [
                    RuleViolation(
                        ApprovalCode.ALREADY_APPROVED,
                        f"revision {latest.number} of {label} is approved already",
                        "revision",
                    )
                ]
            )
        own = list(
            Revision.objects.filter(
                record_kind=record_kind,
                record_key=record_key,
                number__gt=since or 0,
                number__lte=latest.number,
                author=user,
            )
            .order_by("number")
            .values_list("number", flat=True)
        )
        if own and settings.FOUR_EYES:
            raise RuleViolations([_own_change(label, own, since, latest.number)])
        approval = _chain(
            head,
            latest,
            reviewer=user,
            since=since,
            note=note,
            self_approved=bool(own),
        )
        approval.save()
        head.save(update_fields=["approval_number", "approval_hash"])
        records_approved([approval])
        emit_approvals([approval])
        return approval


@dataclass
class PendingOutcome:
    """What ``approve_pending`` did: the approvals written, and the records it left for
    another reviewer (four eyes: their range holds a change of the approving reviewer)."""

    approved: list[Approval]
    left: list[tuple[str, str]]


def approve_pending(
    *,
    user: User,
    note: str = "",
    kinds: list[str] | None = None,
    records: Collection[tuple[str, str]] | None = None,
    batch_size: int = 500,
) -> PendingOutcome:
    """Approve the latest revision of every record that has revisions after its latest
    approved one (of ``kinds``, or only the named ``records``), as ``user``: what loading a
    reviewed bundle (the seed, ``load_records --approve-as``) and ``manage.py approve
    --all`` do. Four eyes applies to each record as to ``approve``: a record whose range
    holds a change of ``user`` is left (and listed) when it is on, self-approved when it is
    off. One transaction under the ledger lock; the records are read kind by kind in key
    order, ``batch_size`` at a time."""
    note = (note or "").strip()
    outcome = PendingOutcome([], [])
    with transaction.atomic():
        head = lock_head()
        require_role(user, "reviewer", "approving revisions")
        for kind in record_kinds:
            if kinds is not None and kind.name not in kinds:
                continue
            if records is not None:
                named = sorted(key for name, key in records if name == kind.name)
                for start in range(0, len(named), batch_size):
                    keys = named[start : start + batch_size]
                    _approve_batch(head, kind.name, keys, user, note, outcome)
                continue
            after = ""
            while True:
                keys = list(
                    kind.model._default_manager.filter(key__gt=after)
                    .order_by("key")
                    .values_list("key", flat=True)[:batch_size]
                )
                if not keys:
                    break
                after = keys[-1]
                _approve_batch(head, kind.name, keys, user, note, outcome)
        head.save(update_fields=["approval_number", "approval_hash"])
    return outcome


def _approve_batch(
    head: LedgerHead,
    kind: str,
    keys: list[str],
    user: User,
    note: str,
    outcome: PendingOutcome,
) -> None:
    latest_numbers = dict(
        Revision.objects.filter(record_kind=kind, record_key__in=keys)
        .order_by()
        .values("record_key")
        .annotate(last=Max("number"))
        .values_list("record_key", "last")
    )
    approved = dict(
        Approval.objects.filter(record_kind=kind, record_key__in=keys)
        .order_by()
        .values("record_key")
        .annotate(last=Max("revision_number"))
        .values_list("record_key", "last")
    )
    waiting = {
        key: number
        for key, number in latest_numbers.items()
        if approved.get(key) is None or approved[key] < number
    }
    if not waiting:
        return
    revisions = {
        revision.record_key: revision
        for revision in Revision.objects.filter(number__in=list(waiting.values()))
    }
    own_rows = Revision.objects.filter(
        record_kind=kind, record_key__in=list(waiting), author=user
    ).values_list("record_key", "number")
    own = {key for key, number in own_rows if number > (approved.get(key) or 0)}
    rows = []
    for key in sorted(waiting):
        if key in own and settings.FOUR_EYES:
            outcome.left.append((kind, key))
            continue
        rows.append(
            _chain(
                head,
                revisions[key],
                reviewer=user,
                since=approved.get(key),
                note=note,
                self_approved=key in own,
            )
        )
    Approval.objects.bulk_create(rows)
    records_approved(rows)
    emit_approvals(rows)
    outcome.approved += rows


def _chain(
    head: LedgerHead,
    revision: Revision,
    *,
    reviewer: User,
    since: int | None,
    note: str,
    self_approved: bool,
) -> Approval:
    """The next approval of the chain (not saved), advancing ``head`` in memory."""
    number = head.approval_number + 1
    created_at = timezone.now().astimezone(dt.UTC)
    status = json.loads(revision.snapshot).get("status", "")
    digest = approval_chain_hash(
        head.approval_hash,
        number,
        revision.record_kind,
        revision.record_key,
        revision.number,
        revision.chain_hash,
        since,
        reviewer.pk,
        created_at,
        note,
        self_approved,
        status,
    )
    approval = Approval(
        number=number,
        record_kind=revision.record_kind,
        record_key=revision.record_key,
        revision=revision,
        revision_number=revision.number,
        since_number=since,
        reviewer=reviewer,
        created_at=created_at,
        note=note,
        self_approved=self_approved,
        status=status,
        previous_hash=head.approval_hash,
        chain_hash=digest,
    )
    head.approval_number = number
    head.approval_hash = digest
    return approval


def _own_change(label: str, own: list[int], since: int | None, latest: int) -> RuleViolation:
    numbers = ", ".join(str(number) for number in own)
    start = f"its approved revision {since}" if since is not None else "its first revision"
    return RuleViolation(
        ApprovalCode.OWN_CHANGE,
        f"four eyes: the revisions of {label} from {start} up to {latest} include your own "
        f"change (revision{'s' if len(own) > 1 else ''} {numbers}); another reviewer must "
        "approve them",
        "revision",
    )
