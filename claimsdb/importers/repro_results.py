"""The `repro-results/1` importer (docs/repro-results-1.md): one class for the command, the
API and the upload page.

The pipeline of one file:

1. **check** — one streaming pass of the pure parser (``repro.parse_results``), which
   also hashes the file: every format problem, with its JSON path;
2. **resolve** — under the ledger lock: the run already imported? the case and the claims;
3. **write** — one ``services.write_records`` call: the case document with the run's summary
   added (or replaced), the run, scenario and trial rows written in its ``before_apply``
   hook (the second streaming pass), and one ``import`` revision;
4. **report** — a ``Report`` saying what happened, stored as an ``ImportReport`` row.

A refused file writes nothing to the domain tables or the ledger: its report row is written
after the refused transaction rolled back. Imported counters stay lab observations inside
the run's summary: the importer never creates figures, so they can never become
``production`` figures or an impact basis.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import unicodedata
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, BinaryIO

import ijson
from django.contrib.auth.models import User
from django.db import transaction

from claimsdb.codes import ImportCode, PermissionCode
from claimsdb.models import Case, Claim, ClaimIdReservation, ImportReport, ReproductionRun
from claimsdb.records import PermissionDenied, RuleViolation, RuleViolations, record_document
from claimsdb.records.schema import control_message, first_control_character
from claimsdb.services.ledger import format_time, lock_head
from claimsdb.services.permissions import require_role
from claimsdb.services.writer import RecordWrite, write_records
from claimsdb.webhooks.events import emit_import

from . import storage
from .matching import Match, match_run
from .repro import ParsedRun, Problem, parse_results, trial_rows
from .repro.content_hash import ContentDigest

# What an import did (``Report.outcome``, ``ImportReport.outcome``).
IMPORTED = "imported"
REPLACED = "replaced"
RESTORED = "restored"  # rows stored for a run known only from a restored case document
UNCHANGED = "unchanged"
REFUSED = "refused"
WOULD_IMPORT = "would_import"
WOULD_REPLACE = "would_replace"
WOULD_RESTORE = "would_restore"
# A background import before it has an outcome (claimsdb/importers/jobs.py); "failed" is
# one whose job stopped on an unexpected error: nothing was written, and it can be retried.
QUEUED = "queued"
RUNNING = "running"
FAILED = "failed"
OUTCOMES = (
    IMPORTED,
    REPLACED,
    RESTORED,
    UNCHANGED,
    REFUSED,
    WOULD_IMPORT,
    WOULD_REPLACE,
    WOULD_RESTORE,
    QUEUED,
    RUNNING,
    FAILED,
)
WRITTEN = (IMPORTED, REPLACED, RESTORED)
DRY = {IMPORTED: WOULD_IMPORT, REPLACED: WOULD_REPLACE, RESTORED: WOULD_RESTORE}

IMPORT_ROLE = "analyst"
_CHUNK = 1024 * 1024
_SPOOL_IN_MEMORY = 8 * 1024 * 1024

# progress(phase, bytes read so far, total bytes or None); phases "checking" and "storing".
Progress = Callable[[str, int, int | None], None]


@dataclass
class Report:
    """What one import attempt did, or (``dry_run``) would have done.

    ``problems`` lists every reason for a refusal, each with a stable code and the JSON path
    it concerns in the file (``scenarios[2].late_writes_landed``); ``revision`` is the
    ``import`` revision of the case (None when nothing was written).
    """

    filename: str
    outcome: str = REFUSED
    dry_run: bool = False
    replace: bool = False
    user: str = ""
    sha256: str = ""  # the file's identity: the SHA-256 of its canonical JSON
    file_sha256: str = ""  # the SHA-256 of the bytes received
    size: int = 0
    run_id: str = ""
    case: str = ""
    claims: list[str] = field(default_factory=list)
    scenarios: int = 0
    trial_rows: int = 0
    problems: list[Problem] = field(default_factory=list)
    revision: int | None = None
    other_revisions: list[int] = field(default_factory=list)
    replaced_sha256: str = ""
    message: str = ""
    id: int | None = None  # the stored ImportReport
    created_at: str | None = None
    progress: dict[str, Any] = field(default_factory=dict)  # of a background import
    # The components the run bears on (docs/coverage.md): each framework and backend named,
    # with its build and the component it matched; ``unmatched``: those that matched none
    # (never guessed), each with its reason and where the file names it.
    components: list[dict[str, Any]] = field(default_factory=list)
    unmatched: list[dict[str, Any]] = field(default_factory=list)

    @property
    def outcome_label(self) -> str:
        return self.outcome.replace("_", " ")

    @property
    def created(self) -> datetime | None:
        """``created_at`` as a datetime (for templates)."""
        return datetime.fromisoformat(self.created_at) if self.created_at else None

    @property
    def refused(self) -> bool:
        return self.outcome == REFUSED

    @property
    def written(self) -> bool:
        return self.outcome in WRITTEN

    @property
    def codes(self) -> list[str]:
        return [p.code for p in self.problems]

    @property
    def conflict(self) -> bool:
        """Refused because the run_id is taken by other content (HTTP 409)."""
        return self.refused and ImportCode.RUN_CONFLICT in self.codes

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["problems"] = [
            {"code": p.code, "message": p.message, "path": p.path} for p in self.problems
        ]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        known = {name for name in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in known}
        values["problems"] = [
            Problem(p.get("code", ""), p.get("message", ""), p.get("path", ""))
            for p in data.get("problems", [])
        ]
        return cls(**values)

    @classmethod
    def from_row(cls, row: ImportReport) -> Report:
        """The report stored with an ImportReport row."""
        report = cls.from_dict(row.report)
        report.id = row.pk
        report.created_at = _time(row.created_at)
        report.outcome = row.outcome  # a background import's row moves on before its report
        report.progress = dict(row.progress or {})
        return report


class _Refused(Exception):
    def __init__(self, problems: list[Problem]):
        super().__init__("; ".join(p.code for p in problems))
        self.problems = problems


class _DryRunDone(Exception):
    """Rolls back a dry run's writes once they have been checked."""


class ResultsImporter:
    """Imports `repro-results/1` files as ``user``, one file per ``import_file`` call.

    ``replace``: a file whose run_id was imported with other content replaces that run
    (otherwise it is refused with ``import.run_conflict``). ``dry_run``: check everything,
    write nothing (but the report). ``summary``: the revision summary (default
    ``Imported <run_id>``).
    """

    def __init__(
        self,
        *,
        user: User,
        dry_run: bool = False,
        replace: bool = False,
        summary: str = "",
        progress: Progress | None = None,
        report_id: int | None = None,
    ) -> None:
        self.user = user
        self.dry_run = dry_run
        self.replace = replace
        self.summary = (summary or "").strip()
        self.progress = progress
        # a queued import's row, which the report fills in instead of adding a new one
        self.report_id = report_id
        # False when that row was finished by another job first, and left as it was
        self.report_stored = True

    # --- the pipeline -----------------------------------------------------------------------

    def import_path(self, path: str | os.PathLike[str]) -> Report:
        with open(path, "rb") as stream:
            return self.import_file(stream, filename=os.fspath(path))

    def import_file(self, stream: BinaryIO, *, filename: str) -> Report:
        """Import one results file (any binary stream; a seekable one is read twice)."""
        bad = first_control_character(filename, allow_whitespace=False)
        report = Report(
            filename=filename if bad is None else _printable(filename),
            dry_run=self.dry_run,
            replace=self.replace,
            user=getattr(self.user, "username", "") or "",
        )
        if bad is not None:
            message = f"the file name {control_message(bad)}; rename the file"
            report.problems = [Problem(ImportCode.FILENAME_INVALID, message, "filename")]
            return self._finish_refused(report)
        try:
            # Checked again inside the writing transaction; this spares a refused user the
            # reading of a large file.
            require_role(self.user, IMPORT_ROLE, "importing reproduction results")
        except PermissionDenied as denied:
            report.problems = [_from_violation(denied.violation)]
            return self._finish_refused(report)
        with _seekable(stream) as source:
            parsed = self._check(source, report)
            if report.problems or parsed is None:
                return self._finish_refused(report)
            try:
                with transaction.atomic():
                    lock_head()
                    self._resolve_and_write(source, parsed, report)
            except _Refused as refusal:
                report.problems = refusal.problems
                return self._finish_refused(report)
            except RuleViolations as refusal:
                report.problems = [_from_violation(v, case=report.case) for v in refusal.violations]
                return self._finish_refused(report)
            except PermissionDenied as denied:
                report.problems = [_from_violation(denied.violation)]
                return self._finish_refused(report)
        if report.id is None:
            self._store_report(report)
        return report

    def _check(self, source: BinaryIO, report: Report) -> ParsedRun | None:
        """Pass 1: parse and validate the whole file, hashing it on the way."""
        reader = _Reader(source, _size(source), self.progress, "checking")
        digest = ContentDigest()
        parsed, problems = parse_results(reader, digest)
        reader.drain()
        report.file_sha256 = reader.hexdigest()
        # a file that is not one JSON object has no canonical form: its bytes name it
        report.sha256 = digest.hexdigest() or report.file_sha256
        report.size = reader.count
        if parsed is not None:
            report.run_id = parsed.run_id
            report.case = parsed.case
            report.claims = list(parsed.claims)
            report.scenarios = len(parsed.scenarios)
            report.trial_rows = sum(parsed.trial_counts.values())
        report.problems = list(problems)
        return parsed

    def _resolve_and_write(self, source: BinaryIO, parsed: ParsedRun, report: Report) -> None:
        """Under the ledger lock: decide what the file does, and do it in one service call."""
        existing = (
            ReproductionRun.objects.select_related("case").filter(run_id=parsed.run_id).first()
        )
        if existing is not None and existing.file_sha256 == report.file_sha256:
            # imported before files were named by their content: it keeps the name its case
            # documents give it, its bytes' SHA-256
            report.sha256 = existing.file_sha256
        summary = {**parsed.header, "sha256": report.sha256}
        restoring = False
        if existing is not None and existing.file_sha256 == report.sha256:
            if existing.summary == summary and existing.scenarios.exists():
                report.outcome = UNCHANGED
                report.message = (
                    f"Already imported: run {parsed.run_id} is in case {existing.case.key} "
                    "with this very file; nothing was written."
                )
                return
            # Known from a case document restored without its rows: store them now.
            restoring = existing.summary == summary
        case, problems = _resolve_case_and_claims(parsed)
        matches = match_run(parsed)
        report.components = [m.as_dict() for m in matches if m.component]
        report.unmatched = [m.as_dict() for m in matches if not m.component]
        if existing is not None and not restoring and not self.replace:
            problems.append(_run_conflict(existing, report.sha256))
        if problems:
            raise _Refused(problems)
        assert case is not None

        writes = [_case_write(case.key, summary, parsed.run_id)]
        if existing is not None and existing.case_id != case.pk:
            # The replacement moves the run to another case: that case loses it.
            writes.append(_case_write(existing.case.key, None, parsed.run_id))
        outcome = RESTORED if restoring else REPLACED if existing is not None else IMPORTED

        def store_run() -> None:
            self._store_run(source, parsed, case, summary, report, existing, restoring, matches)

        revision_summary = self._revision_summary(outcome, parsed.run_id, existing, report)
        if self.dry_run:
            self._rehearse(writes, revision_summary, store_run)
            report.outcome = DRY[outcome]
            report.message = _dry_message(outcome, parsed.run_id, case.key)
            return
        outcomes = write_records(
            user=self.user,
            writes=writes,
            summary=revision_summary,
            role=IMPORT_ROLE,
            before_apply=store_run,
        )
        revisions = {o.key: o.revision.number for o in outcomes if o.revision is not None}
        report.revision = revisions.get(case.key)
        report.other_revisions = sorted(n for k, n in revisions.items() if k != case.key)
        if existing is not None:
            report.replaced_sha256 = "" if restoring else existing.file_sha256
        report.outcome = outcome
        report.message = _written_message(outcome, parsed.run_id, case.key, report)
        # The report row commits with the import it describes.
        self._store_report(report)

    def _rehearse(
        self, writes: list[RecordWrite], summary: str, store_run: Callable[[], None]
    ) -> None:
        """A dry run: the whole write but the trial rows, every rule checked, rolled back."""
        try:
            with transaction.atomic():
                write_records(
                    user=self.user,
                    writes=writes,
                    summary=summary,
                    role=IMPORT_ROLE,
                    before_apply=store_run,
                )
                raise _DryRunDone
        except _DryRunDone:
            pass

    def _store_run(
        self,
        source: BinaryIO,
        parsed: ParsedRun,
        case: Case,
        summary: dict[str, Any],
        report: Report,
        existing: ReproductionRun | None,
        restoring: bool,
        matches: list[Match],
    ) -> None:
        """``before_apply``: the run, its scenarios, the components they ran and (pass 2)
        its trial rows."""
        if restoring:
            assert existing is not None
            run = existing
            scenarios = storage.create_scenarios(existing, parsed)
        else:
            if existing is not None:
                storage.delete_run(existing)
            run, scenarios = storage.create_run(
                case=case, parsed=parsed, summary=summary, sha256=report.sha256
            )
        storage.create_run_components(run, scenarios, matches)
        if self.dry_run or not parsed.has_trials:
            return
        source.seek(0)
        reader = _Reader(source, report.size, self.progress, "storing")
        rows = trial_rows(reader)
        pks = {name: scenario.pk for name, scenario in scenarios.items()}
        try:
            stored = storage.insert_rows(storage.stored_rows(rows, pks))
        except (ijson.JSONError, KeyError, TypeError) as error:
            raise _Refused(
                [_file_changed(f"its trial rows no longer read back ({error})")]
            ) from error
        reader.drain()
        if reader.hexdigest() != report.file_sha256 or stored != report.trial_rows:
            raise _Refused([_file_changed("its content changed between the two reads")])

    def _revision_summary(
        self, outcome: str, run_id: str, existing: ReproductionRun | None, report: Report
    ) -> str:
        if outcome == REPLACED:
            assert existing is not None
            replaced = (
                f"replaced run {run_id}: file sha256 {existing.file_sha256[:12]}… → "
                f"{report.sha256[:12]}…"
            )
            return f"{self.summary} ({replaced})" if self.summary else replaced.capitalize()
        if outcome == RESTORED:
            restored = f"stored the trial rows of run {run_id}"
            return f"{self.summary} ({restored})" if self.summary else restored.capitalize()
        return self.summary or f"Imported {run_id}"

    # --- the report row ---------------------------------------------------------------------

    def _finish_refused(self, report: Report) -> Report:
        report.outcome = REFUSED
        report.revision = None
        count = len(report.problems)
        report.message = (
            f"Refused: {count} problem{'s' if count != 1 else ''} (listed with their paths); "
            "nothing was written."
        )
        self._store_report(report)
        return report

    def _store_report(self, report: Report) -> None:
        if not getattr(self.user, "pk", None):
            return  # nobody to record it for (an anonymous caller was refused)
        values = {
            "filename": report.filename[:500],
            "file_sha256": report.file_sha256,
            "run_id": report.run_id[:120],
            "case_key": report.case[:40],
            "outcome": report.outcome,
            "dry_run": report.dry_run,
            "revision_number": report.revision,
            "report": report.as_dict(),
        }
        with transaction.atomic():
            self._write_report(report, values)

    def _write_report(self, report: Report, values: dict[str, Any]) -> None:
        """The report row, and its event for webhooks (docs/integrations.md) with it."""
        if self.report_id is not None:
            # Written once: by the job that wrote the revision, in its transaction. A
            # report no longer pending was finished by another job (one queued again while
            # this one was thought dead) and is not overwritten.
            self.report_stored = bool(
                ImportReport.objects.filter(
                    pk=self.report_id, outcome__in=(QUEUED, RUNNING)
                ).update(**values, progress={}, heartbeat_at=None)
            )
            row = ImportReport.objects.get(pk=self.report_id)
        else:
            row = ImportReport.objects.create(user=self.user, **values)
        report.id = row.pk
        report.created_at = _time(row.created_at)
        if self.report_stored and not report.dry_run:
            emit_import(
                report_id=row.pk,
                outcome=report.outcome,
                filename=row.filename,
                run_id=report.run_id,
                case_key=report.case,
                revision=report.revision,
                message=report.message,
                codes=report.codes,
            )


# --- resolving the case and the claims ----------------------------------------------------


def _resolve_case_and_claims(parsed: ParsedRun) -> tuple[Case | None, list[Problem]]:
    problems: list[Problem] = []
    case = Case.objects.filter(key=parsed.case).first()
    if case is None:
        problems.append(
            Problem(
                ImportCode.CASE_UNKNOWN,
                f"There is no case {parsed.case} in the knowledge base; a run is imported "
                "as evidence of an existing case (create the case first).",
                "case",
            )
        )
    claim_ids = [c for c in parsed.header.get("claims", []) if isinstance(c, str)]
    owners = dict(Claim.objects.filter(claim_id__in=claim_ids).values_list("claim_id", "case__key"))
    removed = dict(
        ClaimIdReservation.objects.filter(
            claim_id__in=[c for c in claim_ids if c not in owners]
        ).values_list("claim_id", "case_key")
    )
    for index, claim_id in enumerate(parsed.header.get("claims", [])):
        path = f"claims[{index}]"
        owner = owners.get(claim_id)
        if owner is None:
            was = removed.get(claim_id)
            where = f"; it was removed from case {was}" if was else ""
            problems.append(
                Problem(
                    ImportCode.CLAIM_UNKNOWN,
                    f"There is no claim {claim_id}{where}. A run bears only on existing "
                    f"claims of its case {parsed.case}.",
                    path,
                )
            )
        elif owner != parsed.case:
            problems.append(
                Problem(
                    ImportCode.CLAIM_FOREIGN,
                    f"{claim_id} is a claim of case {owner}, not of {parsed.case}: a run bears "
                    "only on claims of the case it is imported into.",
                    path,
                )
            )
    return case, problems


def _run_conflict(existing: ReproductionRun, sha256: str) -> Problem:
    return Problem(
        ImportCode.RUN_CONFLICT,
        f"Run {existing.run_id} was already imported into case {existing.case.key} from "
        f"another file (sha256 {existing.file_sha256[:12]}…, this one {sha256[:12]}…). "
        "Ask for a replacement explicitly to replace it.",
        "run_id",
    )


def _file_changed(why: str) -> Problem:
    return Problem(
        ImportCode.FILE_CHANGED,
        f"The file was checked, but {why}; nothing was written. Import it again.",
        "",
    )


def _case_write(key: str, summary: dict[str, Any] | None, run_id: str) -> RecordWrite:
    """The case's current document with run ``run_id`` set to ``summary`` (None: removed)."""
    document = record_document("case", key)
    assert document is not None, key
    runs = [r for r in document["reproduction_runs"] if r.get("run_id") != run_id]
    if summary is not None:
        runs.append(summary)
    document["reproduction_runs"] = sorted(runs, key=lambda r: str(r.get("run_id", "")))
    return RecordWrite(kind="case", document=document, mode="update", action="import")


# --- messages -----------------------------------------------------------------------------


def _written_message(outcome: str, run_id: str, case: str, report: Report) -> str:
    rows = f"{report.scenarios} scenarios, {report.trial_rows:,} trial rows"
    if outcome == REPLACED:
        return (
            f"Replaced run {run_id} in case {case} ({rows}; the previous file had sha256 "
            f"{report.replaced_sha256[:12]}…), revision {report.revision}."
        )
    if outcome == RESTORED:
        return (
            f"Stored the scenarios and trial rows of run {run_id}, which case {case} already "
            "listed (restored from a document); the case did not change."
        )
    return f"Imported run {run_id} into case {case} ({rows}), revision {report.revision}."


def _dry_message(outcome: str, run_id: str, case: str) -> str:
    verb = {IMPORTED: "imported into", REPLACED: "replaced in", RESTORED: "restored in"}[outcome]
    return f"Dry run: run {run_id} would be {verb} case {case}; nothing was written."


def _printable(name: str) -> str:
    """A file name with its control characters replaced, fit to store and to show."""
    return "".join("\ufffd" if unicodedata.category(c) == "Cc" else c for c in name)


def _from_violation(violation: RuleViolation, case: str = "") -> Problem:
    """A service refusal as a problem of the file (it concerns the case document)."""
    if violation.code == PermissionCode.DENIED or not case:
        return Problem(violation.code, violation.message, violation.path)
    where = f"case {case} {violation.path}".strip() if not violation.record else violation.record
    return Problem(violation.code, f"{where}: {violation.message}", "case")


# --- reading the file ---------------------------------------------------------------------


class _Reader:
    """A read-only view of a stream that hashes and counts what is read, and reports it."""

    def __init__(
        self, stream: BinaryIO, total: int | None, progress: Progress | None, phase: str
    ) -> None:
        self._stream = stream
        self._sha = hashlib.sha256()
        self._progress = progress
        self._phase = phase
        self.total = total
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        chunk = self._stream.read(size)
        if chunk:
            self._sha.update(chunk)
            self.count += len(chunk)
            if self._progress is not None:
                self._progress(self._phase, self.count, self.total)
        return chunk

    def drain(self) -> None:
        """Read (and hash) what the parser left unread, e.g. after a syntax error."""
        while self.read(_CHUNK):
            pass

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


class _seekable:
    """The stream itself if it can be read twice; else a spooled copy (a pipe, stdin)."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._copy: Any = None

    def __enter__(self) -> BinaryIO:
        try:
            seekable = self._stream.seekable()
        except (AttributeError, ValueError):
            seekable = False
        if seekable:
            self._stream.seek(0)
            return self._stream
        self._copy = tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY)
        shutil.copyfileobj(self._stream, self._copy, _CHUNK)
        self._copy.seek(0)
        return self._copy

    def __exit__(self, *exc_info: object) -> None:
        if self._copy is not None:
            self._copy.close()


def _size(stream: BinaryIO) -> int | None:
    try:
        position = stream.tell()
        end = stream.seek(0, os.SEEK_END)
        stream.seek(position)
        return end - position
    except (AttributeError, OSError, ValueError):
        return None


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else format_time(moment)
