"""``manage.py restore DIR``: load a backup into an empty, migrated database."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from claimsdb.services.backups import BackupError, backup_restore


class Command(BaseCommand):
    help = (
        "Restore a backup made by `backup` into this empty, migrated database. Checks every "
        "SHA-256 first and, before committing, that the history verifies with the backup's "
        "chain head and that the export is byte-identical; otherwise writes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("directory", help="a directory written by manage.py backup")

    def handle(self, *args, **options):
        try:
            manifest = backup_restore(source=Path(options["directory"]))
        except BackupError as exc:
            raise CommandError(f"restore refused, nothing written: {exc}") from exc
        self.stdout.write(
            f"restored {options['directory']}: ledger head revision "
            f"{manifest['head']['number']} ({manifest['head']['chain_hash'][:12]}…), "
            "history verified, export identical"
        )
