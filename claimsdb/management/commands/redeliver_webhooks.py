"""``manage.py redeliver_webhooks``: send a subscription's failed deliveries again, e.g. after
a receiver's outage longer than the retry window (docs/integrations.md)."""

from __future__ import annotations

import datetime as dt

from django.core.management.base import BaseCommand, CommandError

from claimsdb.models import DeliveryStatus, WebhookDelivery, WebhookSubscription
from claimsdb.records import PermissionDenied
from claimsdb.webhooks.subscriptions import deliveries_redeliver

from ._common import acting_user

BATCH = 1000


class Command(BaseCommand):
    help = (
        "Make a subscription's deliveries of one status (failed, by default) pending and due "
        "now, with a new retry window; the worker sends them. --since keeps to those made on "
        "or after a date. Acts as --user, a reviewer."
    )

    def add_arguments(self, parser):
        parser.add_argument("--subscription", type=int, required=True, metavar="ID")
        parser.add_argument("--user", default="", help="the reviewer who redelivers")
        parser.add_argument(
            "--status",
            choices=[DeliveryStatus.FAILED, DeliveryStatus.SUCCEEDED],
            default=DeliveryStatus.FAILED,
        )
        parser.add_argument("--since", type=dt.date.fromisoformat, metavar="YYYY-MM-DD")

    def handle(self, *args, **options):
        user = acting_user(options["user"])
        subscription = WebhookSubscription.objects.filter(pk=options["subscription"]).first()
        if subscription is None:
            raise CommandError(f"there is no webhook subscription {options['subscription']}")
        rows = WebhookDelivery.objects.filter(
            subscription=subscription, status=options["status"]
        ).order_by("pk")
        if options["since"]:
            rows = rows.filter(created_at__date__gte=options["since"])
        done, after = 0, 0
        while True:
            # keyset batches: a redelivered delivery leaves the status asked for
            ids = list(rows.filter(pk__gt=after).values_list("pk", flat=True)[:BATCH])
            if not ids:
                break
            try:
                done += deliveries_redeliver(user=user, subscription=subscription, delivery_ids=ids)
            except PermissionDenied as denied:
                raise CommandError(str(denied)) from denied
            after = ids[-1]
        self.stdout.write(f"{done} deliveries of subscription {subscription.pk} will be sent again")
