from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from claimsdb.records import RuleViolations, loads
from claimsdb.records.errors import PermissionDenied
from claimsdb.services import bundle_load

from ._common import acting_user


class Command(BaseCommand):
    help = (
        "Load claimsdb documents (a claimsdb.bundle/1 or single record documents). Each file "
        "loads as one transaction: all of it or nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", help="JSON files (a bundle or one record each)")
        parser.add_argument("--user", required=True, help="the author of the revisions")
        parser.add_argument(
            "--summary", default="", help="revision summary (default: names the file)"
        )
        parser.add_argument(
            "--editorial", action="store_true", help="record the changes as editorial, not material"
        )

    def handle(self, *args, **options):
        user = acting_user(options["user"])
        refused = 0
        for name in options["files"]:
            path = Path(name)
            try:
                raw = loads(path.read_bytes())
                outcomes = bundle_load(
                    user=user,
                    bundle=raw,
                    summary=options["summary"] or f"Loaded from {path.name}",
                    material=not options["editorial"],
                )
            except OSError as exc:
                raise CommandError(f"{name}: cannot read: {exc.strerror}") from exc
            except PermissionDenied as exc:
                raise CommandError(f"{name}: {exc}") from exc
            except RuleViolations as exc:
                refused += 1
                self.stderr.write(
                    f"{name}: refused, nothing written ({len(exc.violations)} problems):"
                )
                for violation in exc.violations:
                    self.stderr.write(f"  {violation}")
                continue
            for outcome in outcomes:
                revision = f" (revision {outcome.revision.number})" if outcome.revision else ""
                self.stdout.write(
                    f"{name}: {outcome.kind} {outcome.key}: {outcome.outcome}{revision}"
                )
            if not outcomes:
                self.stdout.write(f"{name}: no records")
        if refused:
            raise CommandError(f"{refused} file(s) refused")
