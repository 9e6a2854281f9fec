"""The upload page for reproduction results (``/imports/``; docs/repro-results-1.md).

``/imports/`` lists past imports (viewers and up) and, for analysts, takes a results file;
the upload is one ``ResultsImporter`` call, after which the browser is sent to the import's
report (``/imports/<id>/``): every attempt, dry runs and refusals included, has one.

A dry run that would write keeps its file: its report offers "Import it now"
(``/imports/<id>/import/``), which imports those stored bytes with the same options
(``jobs.import_from_dry_run``) and lands on the new import's report.
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from claimsdb.importers import jobs
from claimsdb.importers.repro_results import UNCHANGED, Report, ResultsImporter
from claimsdb.importers.runs import import_reports
from claimsdb.models import ImportReport
from claimsdb.records import record_document

from . import repro
from .access import reader_page, request_has_role, require_working_state
from .pagination import paginate


class UploadForm(forms.Form):
    file = forms.FileField(
        label="Results file", help_text="One repro-results/1 JSON file from the GPU harness."
    )
    summary = forms.CharField(
        required=False,
        max_length=500,
        label="Revision summary",
        help_text="Optional; by default “Imported <run_id>”.",
    )
    dry_run = forms.BooleanField(
        required=False, label="Dry run: check the file and show what would happen, write nothing"
    )
    replace = forms.BooleanField(
        required=False,
        label="Replace the run if it was imported before from a different file",
    )


@reader_page
def import_list(request: HttpRequest) -> HttpResponse:
    require_working_state(request)
    can_import = request_has_role(request, "analyst")
    if request.method == "POST":
        if not can_import:
            raise PermissionDenied("importing results needs the analyst role")
        form = UploadForm(request.POST, request.FILES)
        if form.is_valid():
            upload = form.cleaned_data["file"]
            options = {
                "dry_run": form.cleaned_data["dry_run"],
                "replace": form.cleaned_data["replace"],
                "summary": form.cleaned_data["summary"],
            }
            filename = upload.name or "upload"
            try:
                if jobs.goes_to_background(upload.size, asked=False):
                    # too large to import while the page waits: a worker does it
                    report = jobs.import_enqueue(
                        user=request.user, upload=upload, filename=filename, **options
                    )
                else:
                    report = ResultsImporter(user=request.user, **options).import_file(
                        upload, filename=filename
                    )
                    if options["dry_run"]:
                        jobs.keep_dry_run_file(
                            report,
                            upload,
                            {"replace": options["replace"], "summary": options["summary"]},
                        )
            finally:
                upload.close()
            return redirect("import-detail", report.id)
    else:
        form = UploadForm()
    pages = paginate(request, import_reports(), noun="import")
    return render(
        request,
        "imports/index.html",
        {
            "form": form if can_import else None,
            "pages": pages,
            "reports": [Report.from_row(row) for row in pages.items],
        },
    )


class ImportNowForm(forms.Form):
    summary = forms.CharField(
        required=False,
        max_length=500,
        label="Revision summary",
        help_text="Optional; by default “Imported <run_id>”.",
    )


@reader_page
def import_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require_working_state(request)
    row = _report_row(pk)
    form = None
    offered = row.outcome in jobs.WOULD_WRITE and not (row.options or {}).get("imported_as")
    if request_has_role(request, "analyst") and row.dry_run and offered:
        form = ImportNowForm(initial={"summary": (row.options or {}).get("summary", "")})
    return _detail(request, row, form)


@reader_page
@require_POST
def import_now(request: HttpRequest, pk: int) -> HttpResponse:
    """Import the stored file of dry run ``pk`` (its "Import it now" button)."""
    require_working_state(request)
    if not request_has_role(request, "analyst"):
        raise PermissionDenied("importing results needs the analyst role")
    row = _report_row(pk)
    form = ImportNowForm(request.POST)
    if form.is_valid():
        try:
            report = jobs.import_from_dry_run(
                report_id=row.pk, user=request.user, summary=form.cleaned_data["summary"]
            )
        except jobs.ImportNowRefused as refusal:
            row.refresh_from_db()
            form.add_error(None, refusal.message)
            return _detail(request, row, form, status=409)
        return redirect("import-detail", report.id)
    return _detail(request, row, form, status=400)


def _report_row(pk: int) -> ImportReport:
    row = ImportReport.objects.filter(pk=pk).first()
    if row is None:
        raise Http404(f"no import {pk}")
    return row


def _detail(
    request: HttpRequest, row: ImportReport, form: ImportNowForm | None, *, status: int = 200
) -> HttpResponse:
    report = Report.from_row(row)
    options = row.options or {}
    try:
        jobs.require_importable_dry_run(row)
        unusable = ""
    except jobs.ImportNowRefused as refusal:
        unusable = refusal.message
    return render(
        request,
        "imports/detail.html",
        {
            "report": report,
            "can_import": request_has_role(request, "analyst"),
            "import_now": form,
            "import_now_unusable": unusable,
            "imported_as": options.get("imported_as"),
            "from_dry_run": options.get("from_dry_run"),
            "run_anchor": _run_anchor(report),
        },
        status=status,
    )


def _run_anchor(report: Report) -> str:
    """The anchor on its case's record page of the run an import wrote (or found already
    imported), if the case still lists it; a dry run's or a refusal's run is not linked."""
    if report.dry_run or not (report.written or report.outcome == UNCHANGED) or not report.case:
        return ""
    document = record_document("case", report.case)
    if document is None:
        return ""
    return repro.run_anchors(document.get("reproduction_runs")).get(report.run_id, "")
