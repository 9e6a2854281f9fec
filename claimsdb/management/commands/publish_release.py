from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from claimsdb.records import PermissionDenied, RuleViolations
from claimsdb.services.releases import KIND_ORDER, release_plan, release_publish

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

    def handle(self, *args, **options):
        if options["dry_run"]:
            plan = release_plan()
            rows = [(e.change, e.kind, e.key, e.revision) for e in plan.entries]
            self._report(f"release {plan.number} would publish", rows)
            if not plan.changed:
                self.stdout.write("nothing has changed: publishing would be refused")
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
        rows = [
            (e.change, e.record_kind, e.record_key, e.revision.number)
            for e in release.entries.select_related("revision")
        ]
        rows.sort(key=lambda row: (KIND_ORDER[row[1]], row[2]))
        self._report(f"published release {release.number}", rows)

    def _report(self, heading: str, rows: list[tuple[str, str, str, int]]) -> None:
        changed = [row for row in rows if row[0] != "unchanged"]
        self.stdout.write(
            f"{heading}: {len(changed)} changed, {len(rows) - len(changed)} unchanged"
        )
        for change, kind, key, number in changed:
            self.stdout.write(f"  {change}: {kind} {key} (revision {number})")
