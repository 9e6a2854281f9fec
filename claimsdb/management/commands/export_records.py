from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from claimsdb.exports.osv import iter_osv_array, release_osv_documents
from claimsdb.exports.stix import iter_stix_bundle
from claimsdb.exports.tables import release_csv_zip
from claimsdb.public import release_bundle_lists, release_get
from claimsdb.records import iter_pretty_bundle
from claimsdb.records.schema import BUNDLE_FORMAT
from claimsdb.records.stream import Progress, live_bundle_lists

from ._common import add_streaming_arguments, batch_size, one_snapshot, progress_for


class Command(BaseCommand):
    help = (
        "Export the whole knowledge base (the working state), or with --release N what release "
        "N published, as one claimsdb.bundle/1 (byte-stable); with --format stix or csv, "
        "release N as a STIX 2.1 bundle or a zip of CSV tables (docs/exports.md). Records are "
        "read and written in batches: memory follows --batch-size, not the size of the "
        "knowledge base."
    )

    def add_arguments(self, parser):
        parser.add_argument("--out", help="write to this file instead of standard output")
        parser.add_argument(
            "--release",
            type=int,
            metavar="N",
            help="export release N from its entries' snapshots (withdrawn records included)",
        )
        parser.add_argument(
            "--format",
            choices=FORMATS,
            default="bundle",
            help="bundle: claimsdb.bundle/1 (default); stix: a STIX 2.1 bundle; csv: a zip of "
            "CSV tables; osv: a JSON array of OSV 1.6 documents, one per case with affected "
            "components that have a Package URL (docs/coverage.md) (stix, csv and osv need "
            "--release, and csv needs --out)",
        )
        add_streaming_arguments(parser)

    def handle(self, *args, **options):
        size = batch_size(options)
        progress = progress_for(self.stderr, options)
        chosen = options.get("format") or "bundle"
        if chosen != "bundle":
            self.export_release_as(chosen, options, size, progress)
            return
        with one_snapshot():
            if options["release"] is not None:
                release = release_get(options["release"])
                if release is None:
                    raise CommandError(f"there is no release {options['release']}")
                lists = release_bundle_lists(release, batch_size=size, progress=progress)
            else:
                lists = {
                    "format": BUNDLE_FORMAT,
                    **live_bundle_lists(batch_size=size, progress=progress),
                }
            pieces = iter_pretty_bundle(lists)
            if options["out"]:
                write_file(Path(options["out"]), pieces)
                self.stderr.write(f"wrote {options['out']}")
            else:
                for piece in pieces:
                    sys.stdout.write(piece)
                sys.stdout.flush()

    def export_release_as(self, chosen: str, options: dict, size: int, progress: Progress) -> None:
        """Release N as STIX (text, to a file or standard output) or CSV (a zip file)."""
        if options["release"] is None:
            raise CommandError(f"--format {chosen} exports a release: give --release N")
        if chosen == "csv" and not options["out"]:
            raise CommandError("--format csv writes a zip file: give --out FILE")
        with one_snapshot():
            release = release_get(options["release"])
            if release is None:
                raise CommandError(f"there is no release {options['release']}")
            if chosen == "csv":
                write_binary_file(
                    Path(options["out"]),
                    release_csv_zip(release, batch_size=size, progress=progress),
                )
                self.stderr.write(f"wrote {options['out']}")
                return
            if chosen == "osv":
                pieces = iter_osv_array(release_osv_documents(release, batch_size=size))
            else:
                pieces = iter_stix_bundle(release, batch_size=size, progress=progress)
            if options["out"]:
                write_file(Path(options["out"]), pieces)
                self.stderr.write(f"wrote {options['out']}")
            else:
                for piece in pieces:
                    self.stdout.write(piece, ending="")
                self.stdout.flush()


FORMATS = ("bundle", "stix", "csv", "osv")


def write_binary_file(path: Path, chunks: Iterable[bytes]) -> None:
    """``write_file`` for bytes (a zip): all of it, or the previous file left as it was."""
    handle, temporary = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_file(path: Path, pieces: Iterable[str]) -> None:
    """Write ``pieces`` to ``path`` through a temporary file beside it, renamed into place
    at the end: a failed export leaves the previous file (or none), never half a bundle."""
    handle, temporary = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            for piece in pieces:
                out.write(piece)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
