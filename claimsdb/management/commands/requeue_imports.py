"""``manage.py requeue_imports``: retry background imports that failed or whose worker died."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from claimsdb.importers.jobs import import_requeue


class Command(BaseCommand):
    help = (
        "Put failed background imports back in the queue, and with --stuck-minutes N also "
        "those still 'running' with no progress for N minutes (their worker died). An "
        "import is all-or-nothing, so retrying one never duplicates what it wrote."
    )

    def add_arguments(self, parser):
        parser.add_argument("ids", nargs="*", type=int, help="only these import ids")
        parser.add_argument("--stuck-minutes", type=float, default=None, metavar="N")

    def handle(self, *args, **options):
        requeued = import_requeue(ids=options["ids"], stuck_minutes=options["stuck_minutes"])
        if requeued:
            self.stdout.write("requeued: " + ", ".join(str(pk) for pk in requeued))
        else:
            self.stdout.write("nothing to requeue")
