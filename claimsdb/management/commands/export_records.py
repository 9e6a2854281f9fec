from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from claimsdb.public import release_bundle, release_get
from claimsdb.records import bundle_document, dumps_pretty


class Command(BaseCommand):
    help = (
        "Export the whole knowledge base (the working state), or with --release N what release "
        "N published, as one claimsdb.bundle/1 (byte-stable)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--out", help="write to this file instead of standard output")
        parser.add_argument(
            "--release",
            type=int,
            metavar="N",
            help="export release N from its entries' snapshots (withdrawn records included)",
        )

    def handle(self, *args, **options):
        if options["release"] is not None:
            release = release_get(options["release"])
            if release is None:
                raise CommandError(f"there is no release {options['release']}")
            text = dumps_pretty(release_bundle(release))
        else:
            text = dumps_pretty(bundle_document())
        if options["out"]:
            Path(options["out"]).write_bytes(text.encode("utf-8"))
            self.stderr.write(f"wrote {options['out']}")
        else:
            sys.stdout.write(text)
            sys.stdout.flush()
