from django.core.management.base import BaseCommand, CommandError

from claimsdb.integrity import check_rules


class Command(BaseCommand):
    help = (
        "Scan the whole knowledge base for rule violations (data that predates a rule or was "
        "written behind the service layer); print each with its path; exit non-zero if any."
    )

    def handle(self, *args, **options):
        violations = check_rules()
        for violation in violations:
            self.stderr.write(str(violation))
        if violations:
            raise CommandError(f"{len(violations)} rule violation(s)")
        self.stdout.write("no rule violations")
