"""Turning what happened into deliveries: one per subscription per event, batch by batch.

Two sources, both written in the transaction of the change they report:

* the ledger — revisions are numbered under the ledger lock and commit in their order, so
  the committed revisions are always the numbers 1…head: ``WebhookCursor.revision`` says
  how far they have been fanned out, and a batch reads the next ones along the unique
  index of ``number``;
* ``WebhookEvent`` rows (releases, imports; ``events.emit``), deleted as they are fanned
  out.

A batch runs in one transaction holding the cursor's row lock: it reads up to
``batch_size`` revisions and events, matches them against the subscriptions (read
once per batch, with their owners' roles), inserts the deliveries, numbers them in each
subscription's sequence and moves the cursor. A crash anywhere rolls the whole batch back,
to be done again; nothing is fanned out twice, nothing skipped. The cost of a batch is a
fixed number of queries, whatever the size of the ledger.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Min
from django.utils import timezone

from claimsdb.models import (
    DeliveryStatus,
    LedgerHead,
    Revision,
    WebhookCursor,
    WebhookDelivery,
    WebhookEvent,
    WebhookSubscription,
)
from claimsdb.records.canonical import loads
from claimsdb.records.kinds import record_kinds
from claimsdb.records.schema import normalized_tags
from claimsdb.services.permissions import (
    RANK,
    ROLE_RANK_FIELD,
    loaded_role,
    role_rank_annotation,
)
from claimsdb.services.rows import insert_tuples

from .events import REVISION_WRITTEN, event_types, site_url, time_text

BATCH_SIZE = 500
SUBSCRIBER_ROLE = "reviewer"


@dataclass(frozen=True)
class Happening:
    """One event as the fan-out sees it, from either source."""

    type: str
    occurred_at: dt.datetime
    data: dict[str, Any]
    revision: int  # the ledger head it reports
    chain_hash: str
    record_kind: str
    case_key: str
    tags: frozenset[str]

    def matches(self, subscription: WebhookSubscription) -> bool:
        if self.type not in subscription.events:
            return False
        if self.type == REVISION_WRITTEN.name and self.revision <= subscription.from_revision:
            return False  # written before the subscription was made
        if self.type in event_types and not event_types.get(self.type).filtered:
            return True
        if subscription.kinds and self.record_kind not in subscription.kinds:
            return False
        if subscription.case_keys and (
            self.record_kind != "case" or self.case_key not in subscription.case_keys
        ):
            return False
        return not subscription.tags or bool(self.tags.intersection(subscription.tags))


def lock_cursor() -> WebhookCursor:
    """The fan-out's cursor, locked for the rest of the transaction.

    Migration ``0015_webhooks`` makes it at the ledger head (revisions written before
    webhooks existed are not sent); should it be missing, it is made where the oldest
    subscription starts (at the head when there is none)."""
    cursor = WebhookCursor.objects.select_for_update().filter(pk=1).first()
    if cursor is None:
        start = WebhookSubscription.objects.aggregate(start=Min("from_revision"))["start"]
        if start is None:
            start = LedgerHead.objects.filter(pk=1).values_list("number", flat=True).first()
        head = start or 0
        try:
            with transaction.atomic():
                WebhookCursor.objects.create(pk=1, revision=head)
        except IntegrityError:
            pass  # another fan-out made it first
        cursor = WebhookCursor.objects.select_for_update().get(pk=1)
    return cursor


def subscribers() -> list[WebhookSubscription]:
    """The subscriptions whose owners may still receive what they send (the role is looked
    up again here, with the owners, in one query). Paused ones too: their deliveries are
    made and held until they are active again."""
    subscriptions = list(WebhookSubscription.objects.order_by("pk"))
    owners = {
        user.pk: user
        for user in User.objects.filter(pk__in={s.owner_id for s in subscriptions}).annotate(
            **role_rank_annotation()
        )
    }
    allowed = []
    for subscription in subscriptions:
        owner = owners.get(subscription.owner_id)
        if owner is not None and _holds(owner, SUBSCRIBER_ROLE):
            allowed.append(subscription)
    return allowed


def _holds(user: User, role: str) -> bool:
    assert hasattr(user, ROLE_RANK_FIELD)
    held = loaded_role(user)
    return held is not None and RANK[held] >= RANK[role]


def fan_out(*, batch_size: int = BATCH_SIZE, max_batches: int = 20) -> int:
    """Fan out what has happened, up to ``max_batches`` batches; returns the deliveries made."""
    made = 0
    for _ in range(max_batches):
        count, more = fan_out_batch(batch_size=batch_size)
        made += count
        if not more:
            break
    return made


def fan_out_batch(*, batch_size: int = BATCH_SIZE) -> tuple[int, bool]:
    """One batch (see the module docstring): the deliveries made, and whether more wait."""
    with transaction.atomic():
        cursor = lock_cursor()
        subscriptions = subscribers()
        wanting_revisions = [s for s in subscriptions if REVISION_WRITTEN.name in s.events]
        happenings: list[Happening] = []
        more = False
        if wanting_revisions:
            revisions = _revisions_after(
                cursor.revision,
                batch_size,
                with_tags=any(s.tags for s in wanting_revisions),
            )
            happenings.extend(revisions)
            if revisions:
                cursor.revision = revisions[-1].revision
                cursor.save(update_fields=["revision"])
            more = len(revisions) == batch_size
        else:
            # nobody listens: the cursor moves to the head without reading the ledger
            head = LedgerHead.objects.filter(pk=1).values_list("number", flat=True).first() or 0
            if head != cursor.revision:
                cursor.revision = head
                cursor.save(update_fields=["revision"])
        events = list(WebhookEvent.objects.order_by("pk")[:batch_size])
        happenings.extend(_from_event(event) for event in events)
        if events:
            WebhookEvent.objects.filter(pk__in=[event.pk for event in events]).delete()
            more = more or len(events) == batch_size
        deliveries = list(_deliveries(happenings, subscriptions))
        if deliveries:
            # plain tuples, by binary COPY on PostgreSQL (``services.rows``): a batch of a
            # thousand deliveries costs one statement and no model instance each
            insert_tuples(WebhookDelivery, DELIVERY_COLUMNS, deliveries)
            touched = {delivery[0] for delivery in deliveries}
            WebhookSubscription.objects.bulk_update(
                [s for s in subscriptions if s.pk in touched], ["sequence"]
            )
        return len(deliveries), more


def _revisions_after(number: int, limit: int, *, with_tags: bool) -> list[Happening]:
    columns = [
        "number",
        "record_kind",
        "record_key",
        "action",
        "material",
        "summary",
        "author__username",
        "created_at",
        "snapshot_sha256",
        "previous_hash",
        "chain_hash",
    ]
    if with_tags:
        columns.append("snapshot")
    rows = Revision.objects.filter(number__gt=number).order_by("number").values(*columns)[:limit]
    return [_from_revision(row) for row in rows]


def _from_revision(row: dict[str, Any]) -> Happening:
    kind, key, number = row["record_kind"], row["record_key"], row["number"]
    tags: list[str] = []
    if "snapshot" in row:
        document = loads(row["snapshot"])
        found = document.get("tags") if isinstance(document, dict) else None
        tags = normalized_tags([t for t in found or [] if isinstance(t, str)])
    revision = {
        "number": number,
        "record_kind": kind,
        "record_key": key,
        "action": row["action"],
        "material": row["material"],
        "summary": row["summary"],
        "author": row["author__username"],
        "created_at": time_text(row["created_at"]),
        "snapshot_sha256": row["snapshot_sha256"],
        "previous_hash": row["previous_hash"],
        "chain_hash": row["chain_hash"],
        "url": site_url(f"/api/v1/revisions/{number}/"),
        "page": site_url(record_kinds.get(kind).revision_path(key, number)),
    }
    return Happening(
        type=REVISION_WRITTEN.name,
        occurred_at=row["created_at"],
        data={"revision": revision},
        revision=number,
        chain_hash=row["chain_hash"],
        record_kind=kind,
        case_key=key if kind == "case" else "",
        tags=frozenset(tags),
    )


def _from_event(event: WebhookEvent) -> Happening:
    return Happening(
        type=event.type,
        occurred_at=event.occurred_at,
        data=event.data,
        revision=event.ledger_revision,
        chain_hash=event.ledger_chain_hash,
        record_kind=event.record_kind,
        case_key=event.case_key,
        tags=frozenset(event.tags or []),
    )


DELIVERY_COLUMNS = (
    "subscription",
    "message_id",
    "event_type",
    "sequence",
    "revision",
    "payload",
    "status",
    "created_at",
    "attempt_count",
    "next_attempt_at",
    "window_started_at",
    "lease_token",
    "last_error",
)


def _deliveries(
    happenings: Iterable[Happening], subscriptions: list[WebhookSubscription]
) -> Iterable[tuple[Any, ...]]:
    """The rows of the deliveries (``DELIVERY_COLUMNS``), each subscription's numbered in
    its sequence."""
    now = timezone.now()
    for happening in happenings:
        for subscription in subscriptions:
            if not happening.matches(subscription):
                continue
            subscription.sequence += 1
            message_id = f"msg_{uuid.uuid4().hex}"
            yield (
                subscription.pk,
                message_id,
                happening.type,
                subscription.sequence,
                happening.revision,
                payload(happening, subscription, message_id),
                DeliveryStatus.PENDING.value,
                now,
                0,
                now if subscription.active else None,  # held while it is paused
                now,
                "",
                "",
            )


# Payloads hold no record document (no figure literal to keep): a plain compact encoder.
_ENCODER = json.JSONEncoder(separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def payload(happening: Happening, subscription: WebhookSubscription, message_id: str) -> str:
    """The body of a delivery (docs/integrations.md, "The payload"), compact JSON."""
    return _ENCODER.encode(
        {
            "type": happening.type,
            "timestamp": time_text(happening.occurred_at),
            "id": message_id,
            "data": happening.data,
            "ledger": {
                "revision": happening.revision,
                "chain_hash": happening.chain_hash,
                "feed": site_url(f"/api/v1/revisions/?since={happening.revision}"),
            },
            "subscription": {"id": subscription.pk, "sequence": subscription.sequence},
        }
    )
