"""Imports of reproduction results, and the imported runs, over REST (docs/repro-results-1.md).

* ``POST /api/v1/imports/`` — a ``repro-results/1`` file, as the raw JSON body or as the
  multipart field ``file``; ``dry_run``, ``replace``, ``summary`` (and ``filename``) as query
  or form parameters. Answers with the import's report: 201 imported or replaced, 200
  unchanged or dry run, 400 refused (the error shape plus ``report``), 409
  ``import.run_conflict``.
* ``GET /api/v1/imports/``, ``/api/v1/imports/<id>/`` — past import reports.
* ``GET /api/v1/runs/``, ``/api/v1/runs/<run_id>/`` — imported runs, with each scenario's
  stale-read rate and its 95 % Wilson interval; ``/api/v1/runs/<run_id>/trials.csv`` —
  the trial rows, streamed.

Analysts and reviewers import; viewers read; anonymous callers get 401. The views translate
the request into one ``ResultsImporter`` call and its report into a response.
"""

from __future__ import annotations

import csv
import json
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.http import StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.urls import reverse
from django.utils.datastructures import MultiValueDict
from rest_framework.exceptions import NotFound
from rest_framework.parsers import BaseParser, DataAndFiles, MultiPartParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claimsdb.codes import ImportCode, PermissionCode, RequestCode
from claimsdb.importers import jobs, repro_results
from claimsdb.importers.repro_results import Report, ResultsImporter
from claimsdb.importers.runs import (
    import_reports,
    run_detail,
    run_item,
    run_queryset,
    trial_rows_csv,
)
from claimsdb.models import ImportReport, ReproductionRun
from claimsdb.records import RuleViolation
from claimsdb.records.stream import utf8_chunks

from .common import FALSE_VALUES, TRUE_VALUES, Pagination
from .errors import TITLES, RequestViolations, error_body
from .permissions import AnalystWrites, ViewerReads
from .schema import imports as schema

_CHUNK = 1024 * 1024


# --- request parsing ----------------------------------------------------------------------


class ResultsFileParser(BaseParser):
    """A results file sent as the raw JSON body: spooled to a temporary file, never parsed
    into memory here (the importer streams it, twice)."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None) -> DataAndFiles:
        spool = tempfile.SpooledTemporaryFile(max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE)
        if stream is not None:
            shutil.copyfileobj(stream, spool, _CHUNK)
        spool.seek(0)
        return DataAndFiles({}, MultiValueDict({"file": [spool]}))


def _param(request: Request, name: str) -> str | None:
    value = request.query_params.get(name)
    if value is None and hasattr(request.data, "get"):
        value = request.data.get(name)
    return value if isinstance(value, str) else None


def _flag(request: Request, name: str) -> bool:
    """A true/false parameter, from the query string (``true``/``1``/``yes``/``on`` or their
    opposites) or the form (``true`` or ``false``, the schema's booleans). A value given in
    either place must be one of those; the query string's wins when both are given."""
    sent = [(request.query_params.get(name), TRUE_VALUES, FALSE_VALUES)]
    if hasattr(request.data, "get"):
        sent.append((request.data.get(name), {"true"}, {"false"}))
    values = []
    for raw, true, false in sent:
        if raw is None or (isinstance(raw, str) and raw.strip() == ""):
            continue
        text = raw.strip().lower() if isinstance(raw, str) else None
        if text in true:
            values.append(True)
        elif text in false:
            values.append(False)
        else:
            raise RequestViolations(
                [
                    RuleViolation(
                        RequestCode.INVALID, f"{name} must be true or false, not {raw!r}", name
                    )
                ]
            )
    return values[0] if values else False


# --- responses ----------------------------------------------------------------------------


def report_body(request: Request, report: Report) -> dict[str, Any]:
    """The report as the API gives it, with the absolute URLs of itself and of its run."""
    body = report.as_dict()
    body["url"] = (
        request.build_absolute_uri(reverse("imports_api:import-detail", args=[report.id]))
        if report.id
        else None
    )
    stored = report.written or report.outcome == repro_results.UNCHANGED
    body["run_url"] = (
        request.build_absolute_uri(reverse("imports_api:run-detail", args=[report.run_id]))
        if stored
        else None
    )
    return body


def report_response(request: Request, report: Report) -> Response:
    """The answer to an import: its report, with the status its outcome calls for."""
    if report.refused:
        status = 409 if report.conflict else 400
        if PermissionCode.DENIED in report.codes:
            status = 403
        title = TITLES[409] if status == 409 else "The import was refused"
        violations = [RuleViolation(p.code, p.message, p.path) for p in report.problems]
        return Response(
            {**error_body(status, title, violations), "report": report_body(request, report)},
            status=status,
        )
    if report.written:
        body = report_body(request, report)
        return Response(body, status=201, headers={"Location": body["run_url"]})
    return Response(report_body(request, report), status=200)


# --- views --------------------------------------------------------------------------------


@schema.IMPORT_LIST
class ImportListView(APIView):
    """Import a results file; list past imports."""

    permission_classes = [AnalystWrites]
    parser_classes = [ResultsFileParser, MultiPartParser]
    renderer_classes = [JSONRenderer]

    def get(self, request: Request) -> Response:
        reports = import_reports()
        for name, lookup in (("run_id", "run_id"), ("case", "case_key"), ("outcome", "outcome")):
            value = request.query_params.get(name)
            if value and name == "outcome" and value not in repro_results.OUTCOMES:
                message = "outcome must be one of " + ", ".join(repro_results.OUTCOMES)
                raise RequestViolations([RuleViolation(RequestCode.INVALID, message, name)])
            if value:
                reports = reports.filter(**{lookup: value})
        paginator = Pagination()
        page = paginator.paginate_queryset(reports, request, view=self)
        return paginator.get_paginated_response(
            [report_body(request, Report.from_row(row)) for row in page]
        )

    def post(self, request: Request) -> Response:
        upload = request.FILES.get("file")
        if upload is None:
            raise RequestViolations(
                [
                    RuleViolation(
                        ImportCode.NO_FILE,
                        "send the results file as the raw JSON body or as the multipart "
                        "field `file`",
                        "file",
                    )
                ]
            )
        options = {
            "dry_run": _flag(request, "dry_run"),
            "replace": _flag(request, "replace"),
            "summary": _param(request, "summary") or "",
        }
        background = jobs.goes_to_background(
            jobs.stream_size(upload), asked=_flag(request, "background")
        )
        if isinstance(upload, UploadedFile):
            filename = upload.name or "upload"
        else:
            filename = _param(request, "filename") or "request body"
        try:
            if background:
                report = jobs.import_enqueue(
                    user=request.user, upload=upload, filename=filename, **options
                )
            else:
                importer = ResultsImporter(user=request.user, **options)
                report = importer.import_file(upload, filename=filename)
        finally:
            upload.close()
        if report.outcome in jobs.PENDING:
            body = report_body(request, report)
            return Response(body, status=202, headers={"Location": body["url"]})
        return report_response(request, report)


@schema.IMPORT_DETAIL
class ImportDetailView(APIView):
    permission_classes = [ViewerReads]
    renderer_classes = [JSONRenderer]

    def get(self, request: Request, pk: str) -> Response:
        row = ImportReport.objects.filter(pk=int(pk)).first() if pk.isdigit() else None
        if row is None:
            raise NotFound(f"there is no import {pk}")
        return Response(report_body(request, Report.from_row(row)))


def _run_body(request: Request, item: dict[str, Any]) -> dict[str, Any]:
    return {
        **item,
        "url": request.build_absolute_uri(reverse("imports_api:run-detail", args=[item["run_id"]])),
        "trials_csv": request.build_absolute_uri(
            reverse("imports_api:run-trials", args=[item["run_id"]])
        ),
    }


@schema.RUN_LIST
class RunListView(APIView):
    permission_classes = [ViewerReads]
    renderer_classes = [JSONRenderer]

    def get(self, request: Request) -> Response:
        runs = run_queryset()
        case = request.query_params.get("case")
        if case:
            runs = runs.filter(case__key=case)
        paginator = Pagination()
        page = paginator.paginate_queryset(runs, request, view=self)
        return paginator.get_paginated_response([_run_body(request, run_item(run)) for run in page])


@schema.RUN_DETAIL
class RunDetailView(APIView):
    permission_classes = [ViewerReads]
    renderer_classes = [JSONRenderer]

    def get(self, request: Request, run_id: str) -> Response:
        detail = run_detail(run_id)
        if detail is None:
            raise NotFound(f"there is no imported run {run_id}")
        return Response(_run_body(request, detail))


class CSVRenderer(BaseRenderer):
    """``text/csv`` for content negotiation. The trial rows are streamed by the view itself;
    errors never reach this renderer (``RunTrialsView.finalize_response``)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        return b"" if data is None else str(data).encode("utf-8")


@schema.RUN_TRIALS
class RunTrialsView(APIView):
    """A run's trial rows: CSV by default, a JSON array with ``Accept: application/json``
    (without ``text/csv``) or ``?format=json``. Errors are JSON in the API's one shape,
    whatever was asked for: a client that reads the rows as CSV still reads a refusal."""

    permission_classes = [ViewerReads]
    renderer_classes = [CSVRenderer, JSONRenderer]

    def get(self, request: Request, run_id: str) -> HttpResponseBase:
        run = ReproductionRun.objects.filter(run_id=run_id).first()
        if run is None:
            raise NotFound(f"there is no imported run {run_id}")
        if request.accepted_renderer.format == "json":
            response = StreamingHttpResponse(
                utf8_chunks(_json_rows(trial_rows_csv(run))),
                content_type="application/json",
            )
            response["Content-Disposition"] = f'inline; filename="{run.run_id}-trials.json"'
            return response
        response = StreamingHttpResponse(
            utf8_chunks(_csv_lines(trial_rows_csv(run))), content_type="text/csv; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="{run.run_id}-trials.csv"'
        return response

    def finalize_response(self, request, response, *args, **kwargs):
        if isinstance(response, Response) and response.status_code >= 400:
            # content negotiation may have failed (406) or chosen CSV: an error is JSON
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)


def _json_rows(rows: Iterable[list[Any]]) -> Iterator[str]:
    """The CSV's rows as a JSON array of objects with typed values (numbers, booleans,
    ``null`` for a missing latency, ``extra`` an object), one row at a time."""
    header: list[str] = []
    first = True
    for row in rows:
        if not header:
            header = list(row)
            yield "["
            continue
        item: dict[str, Any] = dict(zip(header, row, strict=True))
        item["n"] = int(item["n"])
        for name in header[2:-2]:
            item[name] = item[name] == "true"
        latency = item["latency_us"]
        item["latency_us"] = None if latency == "" else float(latency)
        item["extra"] = json.loads(item["extra"]) if item["extra"] else {}
        yield ("" if first else ",") + json.dumps(item, ensure_ascii=False, sort_keys=True)
        first = False
    yield "]"


class _Line:
    """A write-only file for csv.writer that hands back what was written."""

    def write(self, value: str) -> str:
        return value


def _csv_lines(rows: Iterable[list[Any]]) -> Iterator[str]:
    writer = csv.writer(_Line(), lineterminator="\n")
    for row in rows:
        yield writer.writerow(row)
