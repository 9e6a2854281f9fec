"""manage.py import_repro_results FILE… --user U [--dry-run] [--replace]

Imports `repro-results/1` files (one import revision per file), prints a table of what each
file did and every problem of each refused file with its JSON path, and exits non-zero if
any file was refused.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from django.core.management.base import (
    BaseCommand,
    CommandError,
    CommandParser,
    OutputWrapper,
)

from claimsdb.importers.repro_results import Report, ResultsImporter

from ._common import TerminalLine, acting_user


class Command(BaseCommand):
    help = (
        "Import reproduction results files (repro-results/1) as lab evidence of their case. "
        "A file is checked whole before anything is written; '-' reads standard input."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument("--user", required=True, help="the analyst the import is recorded for")
        parser.add_argument(
            "--dry-run", action="store_true", help="check everything, write nothing"
        )
        parser.add_argument(
            "--replace",
            action="store_true",
            help="replace a run imported before from a different file with the same run_id",
        )
        parser.add_argument(
            "--summary", default="", help='revision summary (default "Imported <run_id>")'
        )
        parser.add_argument(
            "--progress",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="show a progress bar on standard error (default: when it is a terminal)",
        )
        parser.add_argument(
            "--json", action="store_true", help="print the reports as JSON instead of a table"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user = acting_user(options["user"])
        show_progress = options["progress"]
        if show_progress is None:
            show_progress = self.stderr.isatty()
        bar = ProgressBar(self.stderr) if show_progress else None
        importer = ResultsImporter(
            user=user,
            dry_run=options["dry_run"],
            replace=options["replace"],
            summary=options["summary"],
        )
        reports: list[Report] = []
        for name in options["files"]:
            if bar is not None:
                bar.start(name)
                importer.progress = bar.update
            reports.append(self._import_one(importer, name))
            if bar is not None:
                bar.finish()
        if options["json"]:
            self.stdout.write(json.dumps([r.as_dict() for r in reports], indent=2))
        else:
            self.stdout.write(format_table(reports))
            problems = format_problems(reports)
            if problems:
                self.stdout.write(problems)
            unmatched = format_unmatched(reports)
            if unmatched:
                self.stdout.write(unmatched)
        refused = sum(1 for r in reports if r.refused)
        if refused:
            raise CommandError(f"{refused} of {len(reports)} files refused", returncode=1)

    def _import_one(self, importer: ResultsImporter, name: str) -> Report:
        if name == "-":
            return importer.import_file(sys.stdin.buffer, filename="<stdin>")
        try:
            return importer.import_path(name)
        except OSError as error:
            raise CommandError(f"{name}: {error.strerror or error}") from error


# --- output -------------------------------------------------------------------------------

COLUMNS = ("file", "run", "case", "outcome", "scenarios", "trial rows", "revision")


def format_table(reports: list[Report]) -> str:
    rows = [
        (
            r.filename,
            r.run_id or "–",
            r.case or "–",
            r.outcome.replace("_", " "),
            str(r.scenarios),
            f"{r.trial_rows:,}",
            "–" if r.revision is None else str(r.revision),
        )
        for r in reports
    ]
    widths = [max(len(row[i]) for row in [COLUMNS, *rows]) for i in range(len(COLUMNS))]
    numeric = {4, 5, 6}

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
            for i, cell in enumerate(cells)
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(COLUMNS), rule, *(line(row) for row in rows)])


def format_problems(reports: list[Report]) -> str:
    """Every problem of each refused file, with its path; and what "unchanged" meant."""
    lines: list[str] = []
    for report in reports:
        if not report.problems and report.outcome != "unchanged":
            continue
        lines.append("")
        lines.append(f"{report.filename}: {report.message}")
        for problem in report.problems:
            lines.append(f"  {problem.path or '(file)'}: {problem.code}: {problem.message}")
    return "\n".join(lines)


def format_unmatched(reports: list[Report]) -> str:
    """The names each file's runs ran that matched no component (docs/coverage.md)."""
    lines: list[str] = []
    for report in reports:
        if not report.unmatched:
            continue
        lines.append("")
        lines.append(f"{report.filename}: {len(report.unmatched)} name(s) matched no component:")
        for match in report.unmatched:
            version = f" {match['version']}" if match.get("version") else ""
            lines.append(
                f"  {match['path']}: {match['role']} {match['name']}{version}: {match['reason']}"
            )
    return "\n".join(lines)


class ProgressBar:
    """A plain-text progress bar of bytes read, on one terminal line."""

    WIDTH = 30

    def __init__(self, stream: OutputWrapper) -> None:
        self.line = TerminalLine(stream)
        self.name = ""

    def start(self, name: str) -> None:
        self.name = name if len(name) <= 40 else "…" + name[-39:]
        self.line.clear()

    def update(self, phase: str, done: int, total: int | None) -> None:
        if not self.line.due(final=bool(total and done >= total)):
            return
        if total:
            fraction = min(1.0, done / total)
            filled = int(fraction * self.WIDTH)
            bar = "#" * filled + "." * (self.WIDTH - filled)
            text = (
                f"{self.name} {phase:<8} [{bar}] {fraction * 100:3.0f}% "
                f"{_size(done)} of {_size(total)}"
            )
        else:
            text = f"{self.name} {phase:<8} {_size(done)}"
        self.line.show(text)

    def finish(self) -> None:
        self.line.clear()


def _size(count: int) -> str:
    if count >= 1024 * 1024:
        return f"{count / (1024 * 1024):,.1f} MiB"
    return f"{count / 1024:,.1f} KiB"
