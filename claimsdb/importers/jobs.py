"""Imports as background jobs (docs/operations.md).

A results file of millions of trial rows takes minutes to check and store; an HTTP request
must not wait for it. An upload larger than ``IMPORT_BACKGROUND_BYTES`` (or any upload
sent with ``background=true``) is stored under ``IMPORT_SPOOL_DIR`` and recorded as an
import report whose outcome is ``queued``; a job on the database-backed task queue
(django-tasks with its database backend: the same PostgreSQL or SQLite database, nothing
else to run but ``manage.py db_worker``) then imports it with the same ``ResultsImporter``
as every other path and fills in the same report: ``running`` while it works (with the
bytes it has checked), then ``imported``/``replaced``/``unchanged``/``refused``…

What makes it safe to run, to crash and to run again:

* a job first claims its report (``queued`` → ``running``) with one conditional update,
  so a job delivered twice, or a report already done, does nothing;
* the import itself is one transaction, as always: a job that dies mid-import leaves no
  run, no rows and no revision behind, only a report left ``running`` (a dead worker) or
  marked ``failed`` (an unexpected error), which ``manage.py requeue_imports`` puts back
  in the queue;
* a running job beats (``Heartbeat``: a thread of its own, on a database connection of its
  own, so it beats while the import's transaction is open, the storing pass included): a
  ``running`` report whose last beat is older than ``IMPORT_DEAD_SECONDS`` belongs to a
  dead job, and only such a one is queued again — by ``requeue_imports`` or by the worker
  itself (``requeue_dead_imports``), a few times at most;
* a report is written once: the job that writes the revision writes the report in the
  same transaction, and no other job overwrites a report that is no longer pending;
* the same file queued again while a first copy waits is not queued twice (the pending
  report is returned), and importing a file already imported is a no-op, as it is for
  every import.

A dry run that would write keeps its file in the spool too (``keep_dry_run_file``), so the
analyst who read its report can import the very bytes it checked without uploading them
again (``import_from_dry_run``): once, with the dry run's options but for the summary.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.contrib.auth.models import User
from django.db import DatabaseError, connection, transaction
from django.db.models import F
from django.utils import timezone
from django_tasks import task

from claimsdb.codes import ImportNowCode
from claimsdb.models import ImportReport
from claimsdb.services.permissions import has_role
from claimsdb.webhooks.events import emit_import

from .repro_results import (
    DRY,
    FAILED,
    IMPORT_ROLE,
    QUEUED,
    REFUSED,
    RUNNING,
    Report,
    ResultsImporter,
)

logger = logging.getLogger("claimsdb.imports")

PENDING = (QUEUED, RUNNING)
WOULD_WRITE = frozenset(DRY.values())  # the outcomes of a dry run whose file can be imported
_CHUNK = 1024 * 1024


def spool_dir() -> Path:
    path = Path(settings.IMPORT_SPOOL_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def stream_size(stream: BinaryIO) -> int | None:
    size = getattr(stream, "size", None)
    if isinstance(size, int):
        return size
    try:
        here = stream.tell()
        stream.seek(0, os.SEEK_END)
        end = stream.tell()
        stream.seek(here)
        return end - here
    except (AttributeError, OSError, ValueError):
        return None


def goes_to_background(size: int | None, *, asked: bool) -> bool:
    """Whether an upload is queued rather than imported while the request waits."""
    return asked or (size is not None and size > settings.IMPORT_BACKGROUND_BYTES)


def import_enqueue(
    *,
    user: User,
    upload: BinaryIO,
    filename: str,
    dry_run: bool = False,
    replace: bool = False,
    summary: str = "",
) -> Report:
    """Store ``upload`` and queue its import; return its (``queued``) report.

    A user who may not import gets the importer's own refusal at once, nothing stored.
    """
    if not has_role(user, IMPORT_ROLE) or not _opens_an_object(upload):
        # refused at once, nothing stored: a user who may not import, or a body that is not
        # a JSON object (the importer's parser says what is wrong with it)
        return ResultsImporter(user=user, dry_run=dry_run, replace=replace).import_file(
            upload, filename=filename
        )
    path, sha256, size = _store(upload)
    options = {"replace": replace, "summary": summary}
    with transaction.atomic():
        pending = next(
            (
                row
                for row in ImportReport.objects.select_for_update().filter(
                    outcome__in=PENDING, file_sha256=sha256, dry_run=dry_run
                )
                if row.options == options
            ),
            None,
        )
        if pending is not None:
            path.unlink(missing_ok=True)  # the same file is already waiting: one job is enough
            return Report.from_row(pending)
        report = Report(
            filename=filename,
            outcome=QUEUED,
            dry_run=dry_run,
            replace=replace,
            user=user.get_username(),
            sha256=sha256,
            size=size,
            message="Queued: the file is stored and will be imported by a worker.",
        )
        row = ImportReport.objects.create(
            user=user,
            filename=filename[:500],
            file_sha256=sha256,
            outcome=QUEUED,
            dry_run=dry_run,
            report=report.as_dict(),
            stored_file=str(path),
            options=options,
        )
        transaction.on_commit(lambda: run_import_job.enqueue(row.pk))
    return Report.from_row(row)


def _opens_an_object(upload: BinaryIO) -> bool:
    """Whether the file's first character (after white space) opens a JSON object, as every
    results file does; read from its first 64 KiB, and the file rewound."""
    try:
        upload.seek(0)
        head = upload.read(64 * 1024)
        upload.seek(0)
    except (AttributeError, OSError, ValueError):
        return True  # cannot look ahead: the worker's parse will tell
    return head.lstrip(b" \t\r\n\xef\xbb\xbf")[:1] == b"{"


def _store(upload: BinaryIO) -> tuple[Path, str, int]:
    path = spool_dir() / f"{uuid.uuid4().hex}.json"
    digest = hashlib.sha256()
    size = 0
    try:
        upload.seek(0)
    except (AttributeError, OSError):
        pass
    with path.open("wb") as out:
        while chunk := upload.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
    return path, digest.hexdigest(), size


class _ProgressRecorder:
    """Writes how far the checking pass has got to the report, at most once a second.

    Only outside a transaction: the storing pass runs inside the import's transaction, and
    a row written there would only be seen when everything is."""

    def __init__(self, report_id: int):
        self.report_id = report_id
        self.last = 0.0

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        if connection.in_atomic_block:
            return
        now = time.monotonic()
        finished = total is not None and done >= total
        if now - self.last < 1 and not finished:
            return
        self.last = now
        progress = {
            "phase": "storing" if finished else phase,
            "bytes_done": done,
            "bytes_total": total,
            "updated_at": timezone.now().isoformat(),
        }
        ImportReport.objects.filter(pk=self.report_id, outcome=RUNNING).update(progress=progress)


Clock = Callable[[], dt.datetime]


def heartbeat_seconds() -> float:
    return float(getattr(settings, "IMPORT_HEARTBEAT_SECONDS", 10))


def dead_after() -> dt.timedelta:
    """How long a running import may go without a beat before its job counts as dead."""
    return dt.timedelta(seconds=float(getattr(settings, "IMPORT_DEAD_SECONDS", 120)))


class Heartbeat:
    """Shows that the job running import ``report_id`` is alive: ``heartbeat_at`` is set
    every ``interval`` seconds by a thread of its own, whatever the job is doing.

    The thread has its own database connection (Django's are per thread), so its beats
    commit while the import's transaction is open — through the storing pass, which can
    take minutes. (On SQLite, which has one writer at a time, the beats wait for the
    import's transaction; nothing can requeue the job meanwhile either, for the same
    reason.) ``beat`` is the single beat, for tests and the claim."""

    def __init__(
        self, report_id: int, *, interval: float | None = None, clock: Clock = timezone.now
    ):
        self.report_id = report_id
        self.interval = heartbeat_seconds() if interval is None else interval
        self.clock = clock
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"import-{report_id}-heartbeat", daemon=True
        )

    def beat(self) -> bool:
        """One beat; False once the report is no longer running."""
        return bool(
            ImportReport.objects.filter(pk=self.report_id, outcome=RUNNING).update(
                heartbeat_at=self.clock()
            )
        )

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        # not for ever: a beat may wait for a lock the caller still holds
        self._thread.join(timeout=max(1.0, self.interval))

    def _run(self) -> None:
        from django.db import connection as own  # this thread's connection

        try:
            while not self._stop.wait(self.interval):
                try:
                    if not self.beat():
                        return
                except DatabaseError as exc:
                    logger.warning("import %s: heartbeat not written: %s", self.report_id, exc)
                    own.close()  # the next beat connects again
        finally:
            own.close()


def _claim(report_id: int, *, clock: Clock = timezone.now) -> bool:
    """``queued`` → ``running``, in one conditional update: of two deliveries, one runs."""
    return bool(
        ImportReport.objects.filter(pk=report_id, outcome=QUEUED).update(
            outcome=RUNNING,
            progress={"phase": "starting"},
            heartbeat_at=clock(),
            attempts=F("attempts") + 1,
        )
    )


@task()
def run_import_job(report_id: int) -> str:
    """Import the stored file of a queued report (the worker's side)."""
    if not _claim(report_id):
        return f"import {report_id} is not queued: nothing to do"
    row = ImportReport.objects.select_related("user").get(pk=report_id)
    with Heartbeat(report_id):
        return run_claimed_import(row)


def run_claimed_import(row: ImportReport) -> str:
    """The import of a report this job has claimed (``row`` as it was then)."""
    report_id = row.pk
    importer = ResultsImporter(
        user=row.user,
        dry_run=row.dry_run,
        replace=bool(row.options.get("replace")),
        summary=row.options.get("summary", ""),
        progress=_ProgressRecorder(report_id),
        report_id=report_id,
    )
    try:
        with open(row.stored_file, "rb") as stream:
            report = importer.import_file(stream, filename=row.filename)
    except Exception as exc:
        logger.exception("import %s failed", report_id)
        message = (
            f"The import stopped on an unexpected error ({type(exc).__name__}); "
            "nothing was written. It can be retried (manage.py requeue_imports)."
        )
        with transaction.atomic():
            # only a report still pending: another job may have finished it meanwhile
            failed = ImportReport.objects.filter(pk=report_id, outcome__in=PENDING).update(
                outcome=FAILED,
                progress={"error": f"{type(exc).__name__}: {exc}"},
                report={**row.report, "outcome": FAILED, "message": message},
            )
            if failed and not row.dry_run:
                emit_import(
                    report_id=report_id,
                    outcome=FAILED,
                    filename=row.filename,
                    run_id=row.run_id,
                    case_key=row.case_key,
                    revision=None,
                    message=message,
                )
        raise
    if not importer.report_stored:
        done = ImportReport.objects.filter(pk=report_id).values_list("outcome", flat=True)
        return (
            f"import {report_id}: finished by another job ({done.first()}); this job's "
            f"result ({report.outcome}) is not recorded"
        )
    if row.dry_run and report.outcome in WOULD_WRITE:
        return f"import {report_id}: {report.outcome} (its file kept to be imported)"
    Path(row.stored_file).unlink(missing_ok=True)
    ImportReport.objects.filter(pk=report_id).update(stored_file="")
    return f"import {report_id}: {report.outcome}"


def import_requeue(
    *,
    ids: list[int] | None = None,
    stuck_minutes: float | None = None,
    dead: dt.timedelta | None = None,
    max_attempts: int | None = None,
    failed: bool = True,
    clock: Clock = timezone.now,
) -> list[int]:
    """Put imports back in the queue; returns their ids.

    Failed imports (``failed``), and running ones whose job is dead: no heartbeat for
    ``dead`` (``stuck_minutes``, or ``IMPORT_DEAD_SECONDS`` by default). A job that beats
    is alive however long its import takes, and is never touched: the requeue is a
    conditional update on the beat it read, so a beat that lands meanwhile wins.
    ``max_attempts`` leaves alone an import that many jobs have claimed already.
    """
    if dead is None:
        dead = dt.timedelta(minutes=stuck_minutes) if stuck_minutes is not None else dead_after()
    outcomes = (FAILED, RUNNING) if failed else (RUNNING,)
    rows = ImportReport.objects.filter(outcome__in=outcomes).exclude(stored_file="")
    if ids:
        rows = rows.filter(pk__in=ids)
    if max_attempts is not None:
        rows = rows.filter(attempts__lt=max_attempts)
    cutoff = clock() - dead
    requeued = []
    for pk, outcome, heartbeat_at, progress, created_at in rows.values_list(
        "pk", "outcome", "heartbeat_at", "progress", "created_at"
    ):
        same = ImportReport.objects.filter(pk=pk, outcome=outcome)
        if outcome == RUNNING:
            if heartbeat_at is None:  # claimed before jobs beat: its last progress tells
                seen = (progress or {}).get("updated_at")
                last = dt.datetime.fromisoformat(seen) if seen else created_at
                same = same.filter(heartbeat_at__isnull=True)
            else:
                last = heartbeat_at
                same = same.filter(heartbeat_at=heartbeat_at)
            if last > cutoff:
                continue  # it beats: its job is alive
        with transaction.atomic():
            if same.update(outcome=QUEUED, progress={}, heartbeat_at=None):
                requeued.append(pk)
                transaction.on_commit(functools.partial(run_import_job.enqueue, pk))
    return requeued


def requeue_dead_imports(*, clock: Clock = timezone.now) -> list[int]:
    """What the worker does now and then: queue again the imports whose job died (not the
    failed ones, which wait for someone to look), each at most ``IMPORT_MAX_ATTEMPTS``
    times in all, so a file that kills its worker is not retried for ever."""
    attempts = int(getattr(settings, "IMPORT_MAX_ATTEMPTS", 3))
    requeued = import_requeue(failed=False, max_attempts=attempts, clock=clock)
    if requeued:
        logger.warning(
            "queued again the imports whose job stopped beating: %s",
            ", ".join(map(str, requeued)),
        )
    return requeued


def prune_dry_run_files(*, older_than_days: float) -> list[int]:
    """Delete the stored files of dry runs older than ``older_than_days`` that were never
    imported; returns their report ids. Each file is claimed as ``import_from_dry_run``
    claims one, so a file being imported at the same moment is left to that import; the
    reports stay (they then say the file is gone). Reads the reports in chunks."""
    cutoff = timezone.now() - dt.timedelta(days=older_than_days)
    rows = ImportReport.objects.filter(dry_run=True, created_at__lt=cutoff).exclude(stored_file="")
    pruned = []
    for pk, path in rows.values_list("pk", "stored_file").iterator(chunk_size=500):
        if ImportReport.objects.filter(pk=pk, stored_file=path).update(stored_file=""):
            Path(path).unlink(missing_ok=True)
            pruned.append(pk)
    return pruned


# --- importing a dry run's file ------------------------------------------------------------


class ImportNowRefused(Exception):
    """The dry run's stored file cannot be imported; nothing was written. ``code`` says why
    (``ImportNowCode``)."""

    def __init__(self, code: ImportNowCode, message: str, *, imported_as: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.imported_as = imported_as


def keep_dry_run_file(report: Report, upload: BinaryIO, options: dict) -> None:
    """Keep the file of a dry run that would write, for ``import_from_dry_run``.

    Called after the dry run with the upload it read; the copy is kept only if it is the
    file the dry run checked (the same SHA-256)."""
    if report.id is None or not report.dry_run or report.outcome not in WOULD_WRITE:
        return
    path, sha256, _size = _store(upload)
    if sha256 != report.file_sha256:
        path.unlink(missing_ok=True)
        return
    ImportReport.objects.filter(pk=report.id).update(stored_file=str(path), options=options)


def import_from_dry_run(*, report_id: int, user: User, summary: str) -> Report:
    """Import the stored file of dry run ``report_id`` for real; return the new report.

    The same bytes (checked against the dry run's SHA-256) go through the same importer,
    with the dry run's options but ``dry_run`` (and ``summary``, which the caller gives).
    A file too large to import while a request waits is queued, as an upload would be.
    The dry run is spent once an import from it did not refuse: its file is deleted and
    ``options["imported_as"]`` names the new import. A refused import leaves it as it
    was, so it can be tried again once the knowledge base allows it. Raises
    ``ImportNowRefused`` (nothing written, no report) when the file cannot be imported.
    """
    row = ImportReport.objects.get(pk=report_id)
    require_importable_dry_run(row)
    path = row.stored_file
    # claim the file: of two requests at once, one imports it and the other is refused
    if not ImportReport.objects.filter(pk=row.pk, stored_file=path).update(stored_file=""):
        row.refresh_from_db()
        require_importable_dry_run(row)
        raise ImportNowRefused(
            ImportNowCode.ALREADY_IMPORTED, "This dry run is being imported already."
        )
    options = {"replace": bool(row.options.get("replace")), "summary": (summary or "").strip()}
    try:
        report = _import_stored(row, path, user=user, options=options)
    except BaseException:
        # nothing imported: the dry run stays as it was (its file, even a changed one, kept)
        ImportReport.objects.filter(pk=row.pk, stored_file="").update(stored_file=path)
        raise
    if report.id is not None:
        ImportReport.objects.filter(pk=report.id).update(
            options={**options, "from_dry_run": row.pk}
        )
    if report.outcome == REFUSED:
        ImportReport.objects.filter(pk=row.pk).update(stored_file=path)
    else:
        ImportReport.objects.filter(pk=row.pk).update(
            options={**row.options, "imported_as": report.id}
        )
        Path(path).unlink(missing_ok=True)
    return report


def _import_stored(row: ImportReport, path: str, *, user: User, options: dict) -> Report:
    """The import of a dry run's stored file, once its bytes are checked to be the same."""
    try:
        stream = open(path, "rb")
    except OSError:
        raise ImportNowRefused(ImportNowCode.FILE_GONE, _gone_message(row)) from None
    with stream:
        sha256 = _sha256(stream)
        if sha256 != row.file_sha256:
            raise ImportNowRefused(
                ImportNowCode.FILE_MISMATCH,
                f"The stored file no longer matches the one the dry run checked (sha256 "
                f"{sha256[:12]}…, not {row.file_sha256[:12]}…); nothing was imported. "
                "Upload the file again.",
            )
        if goes_to_background(stream_size(stream), asked=False):
            return import_enqueue(
                user=user, upload=stream, filename=row.filename, dry_run=False, **options
            )
        return ResultsImporter(user=user, dry_run=False, **options).import_file(
            stream, filename=row.filename
        )


def require_importable_dry_run(row: ImportReport) -> None:
    """Refuse (``ImportNowRefused``) a report whose stored file cannot be imported now."""
    if not row.dry_run:
        raise ImportNowRefused(
            ImportNowCode.NOT_DRY_RUN,
            f"Import {row.pk} was not a dry run: there is nothing more to import from it.",
        )
    imported_as = (row.options or {}).get("imported_as")
    if imported_as:
        raise ImportNowRefused(
            ImportNowCode.ALREADY_IMPORTED,
            f"This dry run's file was already imported, as import {imported_as}; a dry run "
            "is imported once.",
            imported_as=imported_as,
        )
    if row.outcome not in WOULD_WRITE:
        raise ImportNowRefused(
            ImportNowCode.DRY_RUN_REFUSED,
            f"The dry run's outcome is “{row.outcome.replace('_', ' ')}”: it would not "
            "import the file, so there is nothing to import.",
        )
    if not row.stored_file or not Path(row.stored_file).is_file():
        raise ImportNowRefused(ImportNowCode.FILE_GONE, _gone_message(row))


def _gone_message(row: ImportReport) -> str:
    return (
        f"The file this dry run checked ({row.filename}) is no longer stored; "
        "upload it again to import it."
    )


def _sha256(stream: BinaryIO) -> str:
    digest = hashlib.sha256()
    stream.seek(0)
    while chunk := stream.read(_CHUNK):
        digest.update(chunk)
    stream.seek(0)
    return digest.hexdigest()
