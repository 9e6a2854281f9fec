"""``manage.py requeue_imports``: retry background imports that failed or whose worker died."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from claimsdb.importers.jobs import import_requeue


class Command(BaseCommand):
    help = (
        "Put failed background imports back in the queue, and those still 'running' whose "
        "job stopped beating (dead) IMPORT_DEAD_SECONDS ago, or --stuck-minutes N ago. A "
        "job that beats is alive and never touched, however long its import takes. An "
        "import is all-or-nothing, so retrying one never duplicates what it wrote."
    )

    def add_arguments(self, parser):
        parser.add_argument("ids", nargs="*", type=int, help="only these import ids")
        parser.add_argument(
            "--stuck-minutes",
            type=float,
            default=None,
            metavar="N",
            help="a running import whose job has not beaten for N minutes is dead "
            "(default: IMPORT_DEAD_SECONDS)",
        )

    def handle(self, *args, **options):
        requeued = import_requeue(ids=options["ids"], stuck_minutes=options["stuck_minutes"])
        if requeued:
            self.stdout.write("requeued: " + ", ".join(str(pk) for pk in requeued))
        else:
            self.stdout.write("nothing to requeue")
