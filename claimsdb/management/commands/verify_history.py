from django.core.management.base import BaseCommand, CommandError

from claimsdb.integrity import history_problems
from claimsdb.models import Revision

from ._common import add_streaming_arguments, batch_size, one_snapshot, progress_for


class Command(BaseCommand):
    help = (
        "Recompute the revision hash chain and check that every record's live state equals "
        "its latest snapshot. Exits non-zero and names each problem. Reads revisions and "
        "records in batches: memory follows --batch-size."
    )

    def add_arguments(self, parser):
        add_streaming_arguments(parser)

    def handle(self, *args, **options):
        size = batch_size(options)
        progress = progress_for(self.stderr, options)
        problems = 0
        with one_snapshot():
            for problem in history_problems(batch_size=size, progress=progress):
                progress.pause()
                self.stderr.write(problem)
                problems += 1
            revisions = Revision.objects.count()
        if problems:
            raise CommandError(f"history does not verify: {problems} problem(s)")
        self.stdout.write(f"history verifies: {revisions} revisions, chain intact")
