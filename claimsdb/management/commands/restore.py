"""``manage.py restore DIR``: load a backup into an empty, migrated database."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from claimsdb.services.backups import BackupError, backup_restore


class Command(BaseCommand):
    help = (
        "Restore a backup made by `backup` into this empty, migrated database. Checks the "
        "manifest's HMAC under the backup key, the list of files and every SHA-256 first "
        "and, before committing, that the history verifies with the backup's chain head, "
        "that check_rules finds no violation and that the export is byte-identical; "
        "otherwise writes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("directory", help="a directory written by manage.py backup")

    def handle(self, *args, **options):
        try:
            checks = backup_restore(source=Path(options["directory"]))
        except BackupError as exc:
            raise CommandError(f"restore refused, nothing written: {exc}") from exc
        for line in checks.lines():
            self.stdout.write(f"  {line}")
        head = checks.manifest["head"]
        self.stdout.write(
            f"restored {options['directory']}: ledger head revision {head['number']} "
            f"({head['chain_hash'][:12]}…)"
        )
