"""``manage.py backup --out DIR``: a consistent, verifiable copy of the knowledge base."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from claimsdb.services.backups import BackupError, backup_write


class Command(BaseCommand):
    help = (
        "Write a backup of the whole knowledge base (ledger, records, imported runs, "
        "releases, accounts and their roles) into a new directory, with a manifest of "
        "SHA-256 sums signed with the backup key (BACKUP_KEY_FILE or BACKUP_KEY)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, help="the directory to create")

    def handle(self, *args, **options):
        try:
            manifest = backup_write(out=Path(options["out"]))
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        rows = sum(f.get("rows", 0) for f in manifest["files"].values())
        self.stdout.write(
            f"backup written to {options['out']}: {len(manifest['files'])} files, {rows} rows, "
            f"ledger head revision {manifest['head']['number']} "
            f"({manifest['head']['chain_hash'][:12]}…), signed with backup key {manifest['key_id']}"
        )
