from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand

from claimsdb.records import bundle_document, dumps_pretty


class Command(BaseCommand):
    help = "Export the whole knowledge base as one claimsdb.bundle/1 (byte-stable)."

    def add_arguments(self, parser):
        parser.add_argument("--out", help="write to this file instead of standard output")

    def handle(self, *args, **options):
        text = dumps_pretty(bundle_document())
        if options["out"]:
            Path(options["out"]).write_text(text, encoding="utf-8")
            self.stderr.write(f"wrote {options['out']}")
        else:
            sys.stdout.write(text)
            sys.stdout.flush()
