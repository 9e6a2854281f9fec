"""``manage.py prune_imports``: delete the kept files of old dry runs never imported."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from claimsdb.importers.jobs import prune_dry_run_files


class Command(BaseCommand):
    help = (
        "Delete the stored results files of dry runs older than --days (7) that were never "
        "imported with 'Import it now'. Their reports stay and say the file is gone; nothing "
        "else is touched. Run it from cron beside the server (docs/operations.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--days", type=float, default=7.0, metavar="N")

    def handle(self, *args, **options):
        if options["days"] < 0:
            raise CommandError("--days: give a number of days, 0 or more")
        pruned = prune_dry_run_files(older_than_days=options["days"])
        self.stdout.write(
            f"deleted the files of {len(pruned)} dry run(s)"
            + (": " + ", ".join(str(pk) for pk in pruned) if pruned else "")
        )
