"""``manage.py match_runs``: relate stored runs to today's components again."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from claimsdb.importers.matching import rematch_stored


class Command(BaseCommand):
    help = (
        "Match every imported run's frameworks and backends again against the components as "
        "they are now (a component added, given an alias or a Package URL after the run was "
        "imported; one withdrawn). Import reports are not changed. --dry-run says what would "
        "change and writes nothing (docs/coverage.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true")
        parser.add_argument("--batch-size", type=int, default=1000, metavar="N")

    def handle(self, *args, **options):
        if options["batch_size"] < 1:
            raise CommandError("--batch-size: give a whole number, 1 or more")
        outcome = rematch_stored(batch_size=options["batch_size"], write=not options["dry_run"])
        for line in outcome.examples:
            self.stdout.write(line)
        verb = "would change" if options["dry_run"] else "changed"
        self.stdout.write(
            f"{outcome.rows} run component(s) matched again: {verb} {outcome.matched} to a "
            f"component, {outcome.unmatched} to none"
        )
