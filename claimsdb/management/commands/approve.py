from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from claimsdb.records import PermissionDenied, RecordNotFound, RuleViolations
from claimsdb.records.kinds import record_kinds
from claimsdb.selectors.approvals import review_range
from claimsdb.services.approvals import approve, approve_pending

from ._common import acting_user


class Command(BaseCommand):
    help = (
        "Approve a record at its latest revision, covering every change since its previous "
        "approved revision (docs/review.md): `approve --user REVIEWER case CP22-003 42`. "
        "Without a revision, print what the approval would cover and write nothing. --all "
        "approves every record awaiting review. Four eyes applies: a reviewer may not "
        "approve a range holding their own change."
    )

    def add_arguments(self, parser):
        parser.add_argument("kind", nargs="?", choices=record_kinds.names())
        parser.add_argument("key", nargs="?")
        parser.add_argument(
            "revision", nargs="?", type=int, help="the record's latest revision, as reviewed"
        )
        parser.add_argument("--user", required=True, help="the approving reviewer")
        parser.add_argument("--note", default="", help="a note kept with the approval")
        parser.add_argument(
            "--all",
            action="store_true",
            help="approve every record awaiting review (those holding a change of --user "
            "are left for another reviewer while four eyes is on)",
        )

    def handle(self, *args, **options):
        user = acting_user(options["user"])
        kind, key, revision = options["kind"], options["key"], options["revision"]
        try:
            if options["all"]:
                if kind or key:
                    raise CommandError("--all approves every record: name none")
                self._all(user, options["note"])
                return
            if not kind or not key:
                raise CommandError("name the record (kind and key), or pass --all")
            if revision is None:
                self._show(kind, key)
                return
            approval = approve(
                user=user,
                record_kind=kind,
                record_key=key,
                revision_number=revision,
                note=options["note"],
            )
        except PermissionDenied as exc:
            raise CommandError(str(exc)) from exc
        except RecordNotFound as exc:
            raise CommandError(str(exc)) from exc
        except RuleViolations as exc:
            for violation in exc.violations:
                self.stderr.write(f"  {violation}")
            raise CommandError(f"refused, nothing written: {', '.join(exc.codes)}") from exc
        label = "self-approved" if approval.self_approved else f"approved by {user.username}"
        self.stdout.write(
            f"{kind} {key}: revision {approval.revision_number} {label} "
            f"(approval {approval.number})"
        )

    def _show(self, kind: str, key: str) -> None:
        pending = review_range(kind, key)
        if pending.latest is None:
            raise RecordNotFound(kind, key)
        if not pending.pending:
            self.stdout.write(f"{kind} {key}: revision {pending.latest} is approved")
            return
        since = pending.approved if pending.approved is not None else "none"
        self.stdout.write(
            f"{kind} {key}: revisions {pending.revisions[0].number}–{pending.latest} await "
            f"review (approved revision: {since}; by {', '.join(pending.authors)})"
        )
        for change in pending.changes:
            self.stdout.write(f"  {change.op}: {change.path}")
        self.stdout.write(f"approve with: approve --user REVIEWER {kind} {key} {pending.latest}")

    def _all(self, user, note: str) -> None:
        outcome = approve_pending(user=user, note=note)
        for approval in outcome.approved:
            self.stdout.write(
                f"{approval.record_kind} {approval.record_key}: revision "
                f"{approval.revision_number} approved"
            )
        for kind, key in outcome.left:
            self.stderr.write(f"  left: {kind} {key}: four eyes: it holds your own change")
        self.stdout.write(f"approved {len(outcome.approved)}, left {len(outcome.left)}")
