from __future__ import annotations

import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from claimsdb.records import RuleViolations
from claimsdb.records.errors import PermissionDenied
from claimsdb.services import bundle_load_file
from claimsdb.services.approvals import approve_pending
from claimsdb.services.bundles import BATCH_SIZE

from ._common import acting_user


class Command(BaseCommand):
    help = (
        "Load claimsdb documents (a claimsdb.bundle/1 or single record documents). Each file "
        "loads as one transaction: all of it or nothing. A bundle is streamed and written in "
        "batches, so its size is bounded by the disk, not by memory (docs/bulk-loading.md)."
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
        parser.add_argument(
            "--approve-as",
            default="",
            metavar="REVIEWER",
            help="approve what the files wrote, as this reviewer, once they are loaded "
            "(docs/review.md); four eyes applies: a record whose changes the reviewer wrote "
            "is left for another",
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=BATCH_SIZE,
            help=f"records per write (default {BATCH_SIZE})",
        )

    def handle(self, *args, **options):
        user = acting_user(options["user"])
        approver = acting_user(options["approve_as"]) if options["approve_as"] else None
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        refused = 0
        written: set[tuple[str, str]] = set()
        for name in options["files"]:
            path = Path(name)
            # outcome lines wait on disk until the file's transaction commits
            with tempfile.TemporaryFile("w+", encoding="utf-8") as lines:

                def report(outcomes, name=name, lines=lines):
                    for outcome in outcomes:
                        if outcome.revision is not None:
                            written.add((outcome.kind, outcome.key))
                        revision = (
                            f" (revision {outcome.revision.number})" if outcome.revision else ""
                        )
                        lines.write(
                            f"{name}: {outcome.kind} {outcome.key}: {outcome.outcome}{revision}\n"
                        )

                try:
                    count = bundle_load_file(
                        user=user,
                        path=path,
                        summary=options["summary"] or f"Loaded from {path.name}",
                        material=not options["editorial"],
                        batch_size=options["batch_size"],
                        on_outcomes=report,
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
                lines.seek(0)
                for line in lines:
                    self.stdout.write(line, ending="")
            if not count:
                self.stdout.write(f"{name}: no records")
        if approver is not None and written:
            self._approve(approver, written)
        if refused:
            raise CommandError(f"{refused} file(s) refused")

    def _approve(self, approver, written: set[tuple[str, str]]) -> None:
        try:
            outcome = approve_pending(
                user=approver, records=written, note="Approved as loaded by load_records"
            )
        except PermissionDenied as exc:
            raise CommandError(f"--approve-as: {exc}") from exc
        self.stdout.write(f"approved {len(outcome.approved)} record(s) as {approver.username}")
        for kind, key in outcome.left:
            self.stderr.write(
                f"  not approved: {kind} {key}: four eyes: {approver.username} wrote a change "
                "of it; another reviewer must approve it"
            )
