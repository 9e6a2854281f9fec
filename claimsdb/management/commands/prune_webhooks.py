"""``manage.py prune_webhooks``: delete old deliveries that have ended, with their attempts."""

from __future__ import annotations

import datetime as dt

from django.core.management.base import BaseCommand, CommandError

from claimsdb.models import DeliveryStatus
from claimsdb.webhooks.delivery import prune


class Command(BaseCommand):
    help = (
        "Delete webhook deliveries that succeeded (and, with --failed, that failed) more than "
        "--days (30) ago, with their attempts. Pending deliveries are never deleted. Run it "
        "from cron beside the worker (docs/integrations.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--days", type=float, default=30.0, metavar="N")
        parser.add_argument(
            "--failed", action="store_true", help="delete failed deliveries that old too"
        )
        parser.add_argument("--batch-size", type=int, default=1000, metavar="N")

    def handle(self, *args, **options):
        if options["days"] < 0:
            raise CommandError("--days: give a number of days, 0 or more")
        if options["batch_size"] < 1:
            raise CommandError("--batch-size: give a whole number, 1 or more")
        statuses = [DeliveryStatus.SUCCEEDED]
        if options["failed"]:
            statuses.append(DeliveryStatus.FAILED)
        pruned = prune(
            dt.timedelta(days=options["days"]),
            statuses=statuses,
            batch_size=options["batch_size"],
        )
        self.stdout.write(
            f"deleted {pruned} {' and '.join(statuses)} webhook deliver"
            f"{'y' if pruned == 1 else 'ies'} older than {options['days']:g} days"
        )
