"""Pages. Each view reads through selectors or calls one service."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from claimsdb import selectors
from claimsdb.records import dumps_pretty
from claimsdb.services.permissions import has_role


def index(request: HttpRequest) -> HttpResponse:
    return render(request, "index.html", {"cases": selectors.case_list()})


@login_required
def case_record_json(request: HttpRequest, key: str) -> HttpResponse:
    """ "Inspect the record": the canonical document (the working state, for signed-in users)."""
    if not has_role(request.user, "viewer"):
        raise Http404
    document = selectors.case_document_or_none(key)
    if document is None:
        raise Http404(f"no case {key}")
    response = HttpResponse(dumps_pretty(document), content_type="application/json; charset=utf-8")
    revision = selectors.latest_revision_number("case", key)
    if revision is not None:
        response["ETag"] = f'"{revision}"'
    return response
