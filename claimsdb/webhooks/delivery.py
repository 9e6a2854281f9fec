"""Sending deliveries: signed, retried with back-off, logged, handed out under leases
(docs/integrations.md, "Deliveries").

A delivery is the queue's unit of work. ``enqueue_due`` — the worker's pump, every
``WEBHOOKS_POLL_SECONDS`` — leases the deliveries that are due (pending, their next
attempt reached, no live lease) with a token and queues a job for each
(``jobs.send_webhook_delivery``). The job sends only while its token holds the lease:
a job queued twice, or after a redelivery, does nothing. A worker killed mid-delivery
leaves the lease to run out (``WEBHOOKS_LEASE_SECONDS``), and the pump hands the delivery
to the next job: a receiver may see one message twice (the same ``webhook-id``), never
none.

Every attempt is signed afresh (the ``webhook-timestamp`` is the attempt's, as Standard
Webhooks receivers check it within five minutes), logged as a ``WebhookAttempt``, and
either ends the delivery (2xx: ``succeeded``) or schedules the next attempt after a wait
that doubles from ``WEBHOOKS_RETRY_BASE_SECONDS`` up to ``WEBHOOKS_RETRY_MAX_SECONDS``,
with up to a tenth more at random so that receivers coming back are not hit all at once.
When the next attempt would fall outside ``WEBHOOKS_RETRY_WINDOW_SECONDS`` from the first,
the delivery is ``failed``; ``redeliver`` makes it pending again with a new window.
"""

from __future__ import annotations

import datetime as dt
import random
import uuid
from collections.abc import Callable, Iterable

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from standardwebhooks import Webhook

from claimsdb.models import DeliveryStatus, WebhookAttempt, WebhookDelivery

from .addresses import AddressRefused, Answer, post, resolve

Clock = Callable[[], dt.datetime]
USER_AGENT = "claimsdb-webhooks/1"
PENDING = DeliveryStatus.PENDING
SUCCEEDED = DeliveryStatus.SUCCEEDED
FAILED = DeliveryStatus.FAILED


def _seconds(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


def lease_time() -> dt.timedelta:
    return dt.timedelta(seconds=_seconds("WEBHOOKS_LEASE_SECONDS", 120))


def retry_delay(attempt: int, *, jitter: Callable[[], float] = random.random) -> dt.timedelta:
    """The wait after failed attempt number ``attempt`` (1, 2, …): base · 2^(attempt-1),
    at most the cap, plus up to a tenth of it at random."""
    base = _seconds("WEBHOOKS_RETRY_BASE_SECONDS", 5)
    cap = _seconds("WEBHOOKS_RETRY_MAX_SECONDS", 3600)
    wait = min(cap, base * 2 ** min(attempt - 1, 40))
    return dt.timedelta(seconds=wait * (1 + 0.1 * jitter()))


def signed_headers(secret: str, message_id: str, body: str, moment: dt.datetime) -> dict[str, str]:
    """The Standard Webhooks headers for ``body`` sent at ``moment``."""
    signature = Webhook(secret).sign(msg_id=message_id, timestamp=moment, data=body)
    return {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": message_id,
        "webhook-timestamp": str(int(moment.timestamp())),
        "webhook-signature": signature,
    }


# --- handing deliveries out --------------------------------------------------------------


def due(now: dt.datetime) -> Q:
    """Deliveries that may be sent now: pending, due, their subscription active, and held
    by no live lease."""
    return Q(status=PENDING, next_attempt_at__lte=now, subscription__active=True) & (
        Q(leased_until__isnull=True) | Q(leased_until__lt=now)
    )


def enqueue_due(
    *,
    limit: int = 200,
    clock: Clock = timezone.now,
    enqueue: Callable[[int, str], object] | None = None,
) -> list[int]:
    """Lease up to ``limit`` due deliveries, oldest due first, and queue a job for each;
    returns their ids. Three queries and one insert a job, whatever the backlog."""
    if enqueue is None:
        from .jobs import send_webhook_delivery

        def enqueue(pk: int, token: str) -> object:
            return send_webhook_delivery.enqueue(pk, token)

    now = clock()
    candidates = list(
        WebhookDelivery.objects.filter(due(now))
        .order_by("next_attempt_at", "pk")
        .values_list("pk", flat=True)[:limit]
    )
    if not candidates:
        return []
    token = uuid.uuid4().hex
    # conditional on being due still: of two pumps at once, each delivery goes to one
    WebhookDelivery.objects.filter(due(now), pk__in=candidates).update(
        leased_until=now + lease_time(), lease_token=token
    )
    leased = list(
        WebhookDelivery.objects.filter(pk__in=candidates, lease_token=token)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    # the jobs are rows of the same database: they commit with the leases, or neither does
    for pk in leased:
        enqueue(pk, token)
    return leased


# --- sending one ---------------------------------------------------------------------------


def send(delivery_id: int, token: str, *, clock: Clock = timezone.now) -> str:
    """Send delivery ``delivery_id`` if ``token`` still holds its lease; log the attempt."""
    now = clock()
    claimed = WebhookDelivery.objects.filter(
        pk=delivery_id, status=PENDING, lease_token=token
    ).update(leased_until=now + lease_time())
    if not claimed:
        return f"delivery {delivery_id}: not this job's to send"
    delivery = WebhookDelivery.objects.select_related("subscription").filter(pk=delivery_id).first()
    if delivery is None:
        return f"delivery {delivery_id}: deleted with its subscription"
    subscription = delivery.subscription
    moment = clock()
    try:
        receiver = resolve(subscription.url)
        headers = signed_headers(subscription.secret, delivery.message_id, delivery.payload, moment)
        answer = post(
            receiver,
            delivery.payload.encode(),
            headers,
            timeout=_seconds("WEBHOOKS_TIMEOUT_SECONDS", 10),
        )
    except AddressRefused as refused:
        answer = Answer(None, f"{refused.code}: {refused.message}")
    return record_attempt(delivery, token, answer, at=moment, clock=clock)


def record_attempt(
    delivery: WebhookDelivery,
    token: str,
    answer: Answer,
    *,
    at: dt.datetime,
    clock: Clock = timezone.now,
) -> str:
    """Log one attempt and decide what comes next: done, another try, or failed."""
    number = delivery.attempt_count + 1
    now = clock()
    next_at: dt.datetime | None = None
    if answer.ok:
        status = SUCCEEDED
    else:
        next_at = now + retry_delay(number)
        window = dt.timedelta(seconds=_seconds("WEBHOOKS_RETRY_WINDOW_SECONDS", 3 * 86400))
        if next_at > delivery.window_started_at + window:
            status, next_at = FAILED, None
        else:
            status = PENDING
    with transaction.atomic():
        written = WebhookDelivery.objects.filter(
            pk=delivery.pk, status=PENDING, lease_token=token
        ).update(
            status=status,
            attempt_count=number,
            next_attempt_at=next_at,
            leased_until=None,
            lease_token="",
            last_attempt_at=at,
            last_status_code=answer.status,
            last_error=answer.error[:2000],
        )
        if not written:
            # redelivered (or handed to another job) meanwhile: that one's attempt counts
            return f"delivery {delivery.pk}: attempt not recorded, the delivery moved on"
        WebhookAttempt.objects.create(
            delivery=delivery,
            number=number,
            at=at,
            status_code=answer.status,
            error=answer.error[:2000],
            next_attempt_at=next_at,
        )
    code = answer.status if answer.status is not None else "no answer"
    return f"delivery {delivery.pk} attempt {number}: {code} → {status}"


# --- pausing and redelivery ----------------------------------------------------------------


def hold(subscription_id: int, *, held: bool, clock: Clock = timezone.now) -> int:
    """Hold a paused subscription's pending deliveries (no next attempt: the due ones are
    read along an index that leaves them out, however many there are), or let them go again
    when it is active, due now with a new retry window. Returns how many."""
    pending = WebhookDelivery.objects.filter(subscription_id=subscription_id, status=PENDING)
    if held:
        # a job sending one now cannot record its attempt: it is sent again on resuming
        return pending.update(next_attempt_at=None, leased_until=None, lease_token="")
    now = clock()
    return pending.filter(next_attempt_at__isnull=True).update(
        next_attempt_at=now, window_started_at=now
    )


def redeliver(delivery_ids: Iterable[int], *, clock: Clock = timezone.now) -> int:
    """Make deliveries pending and due now, with a new retry window (any status: a failed
    one, or one that succeeded and is wanted again). Returns how many."""
    now = clock()
    return WebhookDelivery.objects.filter(pk__in=list(delivery_ids)).update(
        status=PENDING,
        next_attempt_at=now,
        window_started_at=now,
        leased_until=None,
        lease_token="",
    )


def prune(
    older_than: dt.timedelta,
    *,
    statuses: Iterable[str] = (SUCCEEDED,),
    batch_size: int = 1000,
    clock: Clock = timezone.now,
) -> int:
    """Delete the deliveries of ``statuses`` (succeeded, by default) whose last attempt is
    older than ``older_than``, with their attempts; pending deliveries are never deleted.
    Returns how many.

    The deliveries are walked along their primary key, ``batch_size`` at a time, each batch
    deleted in a transaction of its own (no long lock, memory bounded by the batch), and the
    walk stops at the first batch made after the cutoff: a delivery is never attempted
    before it is made, so what is newer cannot be old enough. A subscription's sequence is
    kept on the subscription, so the next delivery's number does not depend on the old ones.
    """
    cutoff = clock() - older_than
    wanted = set(statuses) - {PENDING}
    pruned, after = 0, 0
    while True:
        rows = list(
            WebhookDelivery.objects.filter(pk__gt=after)
            .order_by("pk")
            .values_list("pk", "status", "last_attempt_at", "created_at")[:batch_size]
        )
        if not rows:
            return pruned
        after = rows[-1][0]
        old = [
            pk
            for pk, status, attempted, _ in rows
            if status in wanted and attempted is not None and attempted < cutoff
        ]
        if old:
            with transaction.atomic():
                # only those still as read: one redelivered meanwhile is pending again
                pruned += (
                    WebhookDelivery.objects.filter(
                        pk__in=old, status__in=wanted, last_attempt_at__lt=cutoff
                    )
                    .delete()[1]
                    .get(WebhookDelivery._meta.label, 0)
                )
        if min(created for *_, created in rows) >= cutoff:
            return pruned
