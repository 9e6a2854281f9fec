"""Webhooks: who is told of what, and every delivery made to tell them (docs/integrations.md).

Not records: no revision is written for them. ``claimsdb.webhooks`` is the only code that
writes these tables.
"""

from django.conf import settings
from django.db import models


class WebhookSubscription(models.Model):
    """A receiver's URL, the events it asked for, the filters that narrow them, and the
    secret its deliveries are signed with (Standard Webhooks, ``whsec_…``)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=200, blank=True)
    # event type names (claimsdb.webhooks.events); filters: empty means any
    events = models.JSONField(default=list)
    kinds = models.JSONField(default=list, blank=True)
    case_keys = models.JSONField(default=list, blank=True)
    tags = models.JSONField(default=list, blank=True)
    secret = models.CharField(max_length=100)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # The ledger head when it was made: only revisions after it are delivered to it.
    from_revision = models.PositiveBigIntegerField(default=0)
    # The sequence number of its latest delivery: each delivery takes the next one, so a
    # receiver that sees a gap knows it missed one (and resumes from the revision feed).
    sequence = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"webhook {self.pk} → {self.url}"


class WebhookEvent(models.Model):
    """An event that is not a revision (a release published, an import finished or failed,
    …), written in the transaction of what it reports and deleted once it has been turned
    into deliveries. Revisions need no such row: the ledger is their outbox."""

    type = models.CharField(max_length=40)
    occurred_at = models.DateTimeField()
    data = models.JSONField()
    # the ledger head as the event's transaction saw it (after its own revision, if any)
    ledger_revision = models.PositiveBigIntegerField()
    ledger_chain_hash = models.CharField(max_length=64)
    # what filters match: the record kind and case key the event concerns ("" for none)
    record_kind = models.CharField(max_length=16, blank=True)
    case_key = models.CharField(max_length=100, blank=True)
    tags = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.type} event {self.pk}"


class WebhookCursor(models.Model):
    """The single row that says how far the ledger has been turned into deliveries: every
    revision up to ``revision`` has been. Locked by the fan-out."""

    revision = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"webhooks fanned out up to revision {self.revision}"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "pending"
    SUCCEEDED = "succeeded", "succeeded"
    FAILED = "failed", "failed"


class WebhookDelivery(models.Model):
    """One event for one subscription: the signed message and how sending it went.

    ``pending`` until a receiver answers 2xx (``succeeded``) or its retry window runs out
    (``failed``; redelivery makes it pending again with a new window). ``leased_until``:
    a job has it until then; a lease that runs out (a worker killed mid-delivery) lets the
    next one send it again.
    """

    subscription = models.ForeignKey(
        WebhookSubscription, on_delete=models.CASCADE, related_name="deliveries"
    )
    message_id = models.CharField(max_length=40, unique=True)  # the webhook-id header
    event_type = models.CharField(max_length=40)
    sequence = models.PositiveBigIntegerField()
    revision = models.PositiveBigIntegerField(null=True, blank=True)  # the ledger head it reports
    payload = models.TextField()  # the exact body, compact JSON
    status = models.CharField(
        max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    created_at = models.DateTimeField()
    attempt_count = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    window_started_at = models.DateTimeField()
    leased_until = models.DateTimeField(null=True, blank=True)
    lease_token = models.CharField(max_length=32, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            # the due deliveries, read by the worker every second
            models.Index(
                fields=["next_attempt_at"],
                condition=models.Q(status="pending"),
                name="webhookdelivery_due_idx",
            ),
            # a subscription's deliveries, newest first, a page at a time
            models.Index(fields=["subscription", "-id"], name="webhookdelivery_list_idx"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["subscription", "sequence"], name="webhookdelivery_sequence_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=["pending", "succeeded", "failed"]),
                name="webhookdelivery_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"delivery {self.message_id} ({self.event_type}, {self.status})"


class WebhookAttempt(models.Model):
    """One try at sending a delivery: when, what the receiver answered (or the error), and
    when the next try is due (None once it succeeded or gave up)."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    at = models.DateTimeField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [
            models.UniqueConstraint(fields=["delivery", "number"], name="webhookattempt_unique")
        ]

    def __str__(self) -> str:
        return f"attempt {self.number} of delivery {self.delivery_id}"
