from django.core.management.base import BaseCommand, CommandError

from claimsdb.integrity import rule_violations

from ._common import add_streaming_arguments, batch_size, one_snapshot, progress_for


class Command(BaseCommand):
    help = (
        "Scan the whole knowledge base for rule violations (data that predates a rule or was "
        "written behind the service layer); print each with its path; exit non-zero if any. "
        "Documents are checked in batches: memory follows --batch-size."
    )

    def add_arguments(self, parser):
        add_streaming_arguments(parser)

    def handle(self, *args, **options):
        size = batch_size(options)
        progress = progress_for(self.stderr, options)
        violations = 0
        with one_snapshot():
            for violation in rule_violations(batch_size=size, progress=progress):
                progress.pause()
                self.stderr.write(str(violation))
                violations += 1
        if violations:
            raise CommandError(f"{violations} rule violation(s)")
        self.stdout.write("no rule violations")
