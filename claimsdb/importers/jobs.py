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
  run, no rows and no revision behind, only a report stuck in ``running`` (a dead worker)
  or marked ``failed`` (an unexpected error), which ``manage.py requeue_imports`` puts
  back in the queue;
* the same file queued again while a first copy waits is not queued twice (the pending
  report is returned), and importing a file already imported is a no-op, as it is for
  every import.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import time
import uuid
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.utils import timezone
from django_tasks import task

from claimsdb.models import ImportReport
from claimsdb.services.permissions import has_role

from .repro_results import FAILED, IMPORT_ROLE, QUEUED, RUNNING, Report, ResultsImporter

logger = logging.getLogger("claimsdb.imports")

PENDING = (QUEUED, RUNNING)
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
    user: AbstractBaseUser,
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


@task()
def run_import_job(report_id: int) -> str:
    """Import the stored file of a queued report (the worker's side)."""
    claimed = ImportReport.objects.filter(pk=report_id, outcome=QUEUED).update(
        outcome=RUNNING, progress={"phase": "starting"}
    )
    if not claimed:
        return f"import {report_id} is not queued: nothing to do"
    row = ImportReport.objects.select_related("user").get(pk=report_id)
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
        ImportReport.objects.filter(pk=report_id).update(
            outcome=FAILED,
            progress={"error": f"{type(exc).__name__}: {exc}"},
            report={
                **row.report,
                "outcome": FAILED,
                "message": (
                    f"The import stopped on an unexpected error ({type(exc).__name__}); "
                    "nothing was written. It can be retried (manage.py requeue_imports)."
                ),
            },
        )
        raise
    Path(row.stored_file).unlink(missing_ok=True)
    ImportReport.objects.filter(pk=report_id).update(stored_file="")
    return f"import {report_id}: {report.outcome}"


def import_requeue(
    *, ids: list[int] | None = None, stuck_minutes: float | None = None
) -> list[int]:
    """Put failed imports, and imports stuck ``running`` with no progress for longer than
    ``stuck_minutes`` (their worker died), back in the queue; returns their ids."""
    rows = ImportReport.objects.filter(outcome__in=(FAILED, RUNNING)).exclude(stored_file="")
    if ids:
        rows = rows.filter(pk__in=ids)
    cutoff = timezone.now() - dt.timedelta(minutes=stuck_minutes or 0)
    requeued = []
    for pk, outcome, progress, created_at in rows.values_list(
        "pk", "outcome", "progress", "created_at"
    ):
        if outcome == RUNNING:
            if stuck_minutes is None:
                continue
            seen = (progress or {}).get("updated_at")
            last = dt.datetime.fromisoformat(seen) if seen else created_at
            if last > cutoff:
                continue  # still moving: its worker is alive
        with transaction.atomic():
            if ImportReport.objects.filter(pk=pk, outcome=outcome).update(
                outcome=QUEUED, progress={}
            ):
                requeued.append(pk)
                transaction.on_commit(lambda pk=pk: run_import_job.enqueue(pk))
    return requeued
