"""The upload page for reproduction results (``/imports/``; docs/repro-results-1.md).

``/imports/`` lists past imports (viewers and up) and, for analysts, takes a results file;
the upload is one ``ResultsImporter`` call, after which the browser is sent to the import's
report (``/imports/<id>/``): every attempt, dry runs and refusals included, has one.
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from claimsdb.importers import jobs
from claimsdb.importers.repro_results import Report, ResultsImporter
from claimsdb.importers.runs import import_reports
from claimsdb.models import ImportReport

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


@reader_page
def import_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require_working_state(request)
    row = ImportReport.objects.filter(pk=pk).first()
    if row is None:
        raise Http404(f"no import {pk}")
    return render(
        request,
        "imports/detail.html",
        {"report": Report.from_row(row), "can_import": request_has_role(request, "analyst")},
    )
