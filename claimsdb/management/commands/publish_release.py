from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from claimsdb.models import ReleaseChange
from claimsdb.public import release_counts
from claimsdb.records import PermissionDenied, RuleViolations
from claimsdb.records.kinds import record_kinds
from claimsdb.services.releases import (
    AwaitingReview,
    Waiting,
    latest_release,
    planned_entries,
    release_publish,
)

from ._common import acting_user


class Command(BaseCommand):
    help = (
        "Publish a release: the latest revision of every ready case and every active source, "
        "scope rule and method, with an entry per record (new, updated, withdrawn, "
        "unchanged). Needs a reviewer. --dry-run prints what would be published."
    )

    def add_arguments(self, parser):
        parser.add_argument("--user", default="", help="the reviewer publishing the release")
        parser.add_argument("--notes", default="", help="what the release publishes (required)")
        parser.add_argument(
            "--dry-run", action="store_true", help="print what would be published; write nothing"
        )

    # Both reports stream the changed entries: a release's entries never sit in memory.

    def handle(self, *args, **options):
        if options["dry_run"]:
            self._dry_run()
            return
        user = acting_user(options["user"])
        try:
            release = release_publish(user=user, notes=options["notes"])
        except PermissionDenied as exc:
            raise CommandError(f"{exc}; nothing written") from exc
        except RuleViolations as exc:
            for violation in exc.violations:
                self.stderr.write(f"  {violation}")
            raise CommandError("the release was refused; nothing written") from exc
        self._summary(f"published release {release.number}", release_counts(release))
        for kind in record_kinds.names():  # in listing order, as the release lists them
            rows = (
                release.entries.filter(record_kind=kind)
                .exclude(change=ReleaseChange.UNCHANGED)
                .order_by("record_key")
                .values_list("change", "record_key", "revision__number")
            )
            for change, key, number in rows.iterator(chunk_size=500):
                self._entry(change, kind, key, number)

    def _dry_run(self) -> None:
        """The changed entries as the plan meets them, then the counts."""
        previous = latest_release()
        counts = {change: 0 for change in ReleaseChange.values}

        def waits(waiting: Waiting) -> None:
            self.stdout.write(f"  waits: {waiting.kind} {waiting.key}: {waiting.message}")

        awaiting = [0, 0]  # records, revisions

        def awaits(record: AwaitingReview) -> None:
            awaiting[0] += 1
            awaiting[1] += record.count
            self.stdout.write(f"  awaiting review: {record.kind} {record.key}: {record.message}")

        for entry in planned_entries(waits, awaits):
            counts[entry.change] += 1
            if entry.change != ReleaseChange.UNCHANGED:
                self._entry(entry.change, entry.kind, entry.key, entry.revision)
        number = previous.number + 1 if previous else 1
        if awaiting[0]:
            self.stdout.write(
                f"awaiting review (not published): {awaiting[1]} revision(s) of "
                f"{awaiting[0]} record(s)"
            )
        if self._summary(f"release {number} would publish", counts) == 0:
            self.stdout.write("nothing has changed: publishing would be refused")

    def _summary(self, heading: str, counts: dict[str, int]) -> int:
        unchanged = counts[ReleaseChange.UNCHANGED]
        changed = sum(counts.values()) - unchanged
        self.stdout.write(f"{heading}: {changed} changed, {unchanged} unchanged")
        return changed

    def _entry(self, change: str, kind: str, key: str, number: int) -> None:
        self.stdout.write(f"  {change}: {kind} {key} (revision {number})")
