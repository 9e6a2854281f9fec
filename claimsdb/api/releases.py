"""Releases over REST: anyone reads them; reviewers publish them.

* ``GET /api/v1/releases/`` — releases, newest first, with counts by change;
* ``POST /api/v1/releases/`` with ``{"notes": "…"}`` — publish one (reviewers; 201);
* ``GET /api/v1/releases/<n>/`` — one release and a page of its entries;
* ``GET /api/v1/releases/<n>/bundle.json`` — the release as a ``claimsdb.bundle/1``, the
  same bytes as ``manage.py export_records --release <n>``, cacheable for ever;
* ``GET /api/v1/releases/<n>/stix/`` and ``…/csv/`` — the release as a STIX 2.1 bundle and
  as a zip of CSV tables, the same bytes as ``export_records --release <n> --format stix``
  (``csv``), cacheable for ever (docs/exports.md);
* ``GET /api/v1/stix/extension-schema.json`` — the JSON Schema of the STIX extension.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseNotModified,
    StreamingHttpResponse,
)
from django.http.response import HttpResponseBase
from rest_framework.exceptions import NotFound
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claimsdb import http_caching, public
from claimsdb.codes import DocumentCode, PermissionCode, ReleaseCode
from claimsdb.exports.stix import EXTENSION_SCHEMA_PATH, iter_stix_bundle
from claimsdb.exports.tables import release_csv_zip
from claimsdb.models import Release
from claimsdb.records import RuleViolation, iter_pretty_bundle
from claimsdb.records.kinds import record_kinds
from claimsdb.records.stream import utf8_chunks
from claimsdb.selectors.releases import release_entry_list, with_previous_revisions
from claimsdb.services.permissions import has_role
from claimsdb.services.releases import release_publish

from .common import (
    CanonicalJSONRenderer,
    DocumentJSONParser,
    ErrorsAsJSON,
    NoFormSerializer,
    Pagination,
)
from .errors import RequestViolations
from .rest import link_header
from .schema import releases as schema

RELEASE_NUMBER = re.compile(r"[1-9][0-9]{0,8}")


class ReleasePermission(BasePermission):
    """Anyone reads releases (they are the public record); only reviewers publish."""

    code = PermissionCode.DENIED
    message = "publishing a release needs the reviewer role"

    def has_permission(self, request, view) -> bool:
        return request.method in SAFE_METHODS or has_role(request.user, "reviewer")


def _time(moment) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def release_summary(request: Request, release: Release) -> dict[str, Any]:
    number = release.number
    return {
        "number": number,
        "published_at": _time(release.published_at),
        "notes": release.notes,
        "last_revision": release.last_revision,
        "counts": public.release_counts(release),
        "url": request.build_absolute_uri(f"/api/v1/releases/{number}/"),
        "page": request.build_absolute_uri(f"/releases/{number}/"),
        "bundle": request.build_absolute_uri(f"/api/v1/releases/{number}/bundle.json"),
        "stix": request.build_absolute_uri(f"/api/v1/releases/{number}/stix/"),
        "csv": request.build_absolute_uri(f"/api/v1/releases/{number}/csv/"),
    }


def release_detail(request: Request, release: Release) -> dict[str, Any]:
    """The release and one page of its entries (``?page=``, ``?page_size=``), by record kind
    and key, with ``entries_count`` and the ``entries_next``/``entries_previous`` links."""
    return _release_page(request, release)[0]


def _release_page(request: Request, release: Release) -> tuple[dict[str, Any], str]:
    """``release_detail``, and the ``Link`` header of its entries' pages."""
    paginator = Pagination()
    page = paginator.paginate_queryset(release_entry_list(release), request)
    entries = [
        {
            "kind": entry.record_kind,
            "key": entry.record_key,
            "change": entry.change,
            "revision": entry.revision.number,
            "previous_revision": entry.previous_revision,
            "page": request.build_absolute_uri(
                record_kinds.get(entry.record_kind).revision_path(
                    entry.record_key, entry.revision.number
                )
            ),
        }
        for entry in with_previous_revisions(release, list(page))
    ]
    body = {
        **release_summary(request, release),
        "entries": entries,
        "entries_count": paginator.page.paginator.count,
        "entries_next": paginator.get_next_link(),
        "entries_previous": paginator.get_previous_link(),
    }
    return body, link_header(paginator.links())


def _release_or_404(number: int | str) -> Release:
    text = str(number)
    release = public.release_get(int(text)) if RELEASE_NUMBER.fullmatch(text) else None
    if release is None:
        raise NotFound(f"there is no release {number}", code=ReleaseCode.NOT_FOUND)
    return release


class ReleaseBase(APIView):
    permission_classes = [ReleasePermission]
    parser_classes = [DocumentJSONParser]
    renderer_classes = [CanonicalJSONRenderer]
    serializer_class = NoFormSerializer


@schema.RELEASE_LIST
class ReleaseListView(ReleaseBase):
    def get(self, request: Request) -> Response:
        paginator = Pagination()
        page = paginator.paginate_queryset(Release.objects.order_by("-number"), request, view=self)
        # the counts of the page's releases only (see claimsdb.web.releases.release_list)
        counted = public.release_list().filter(number__in=[r.number for r in page])
        return paginator.get_paginated_response([release_summary(request, r) for r in counted])

    def post(self, request: Request) -> Response:
        body = request.data
        if not isinstance(body, dict):
            raise RequestViolations(
                [RuleViolation(DocumentCode.TYPE, "the body must be an object with notes", "")]
            )
        notes = body.get("notes", "")
        if not isinstance(notes, str):
            raise RequestViolations(
                [RuleViolation(DocumentCode.TYPE, "notes must be a string", "notes")]
            )
        unknown = sorted(set(body) - {"notes"})
        if unknown:
            raise RequestViolations(
                [
                    RuleViolation(
                        DocumentCode.UNKNOWN_FIELD, f"{name!r} is not a field of a release", name
                    )
                    for name in unknown
                ]
            )
        release = release_publish(user=request.user, notes=notes)
        data = release_detail(request, _release_or_404(release.number))
        return Response(data, status=201, headers={"Location": data["url"]})


@schema.RELEASE_DETAIL
class ReleaseDetailView(ReleaseBase):
    def get(self, request: Request, number: str) -> Response:
        body, link = _release_page(request, _release_or_404(number))
        return Response(body, headers={"Link": link})


def release_download(
    request: Request,
    release: Release,
    *,
    tag: str,
    filename: str,
    content_type: str,
    body: Iterator[bytes],
) -> HttpResponseBase:
    """A download of a release, streamed from the ledger in batches (a large release never
    sits in memory) and cacheable for ever: a release never changes."""
    etag = f'"release-{release.number}{tag}"'
    headers = {
        "ETag": etag,
        "Cache-Control": f"public, {http_caching.IMMUTABLE}",
        "Content-Disposition": f'inline; filename="{filename}"',
    }
    response: HttpResponseBase
    if etag in {t.strip() for t in request.headers.get("If-None-Match", "").split(",")}:
        response = HttpResponseNotModified()
    else:
        response = StreamingHttpResponse(body, content_type=content_type)
    for name, value in headers.items():
        response[name] = value
    return response


@schema.RELEASE_BUNDLE
class ReleaseBundleView(ReleaseBase):
    def get(self, request: Request, number: str) -> HttpResponseBase:
        release = _release_or_404(number)
        return release_download(
            request,
            release,
            tag="",
            filename=f"claimsdb-release-{release.number}.json",
            content_type="application/json; charset=utf-8",
            body=utf8_chunks(iter_pretty_bundle(public.release_bundle_lists(release))),
        )


STIX_MEDIA_TYPE = "application/stix+json;version=2.1"


@schema.RELEASE_STIX
class ReleaseStixView(ReleaseBase):
    content_negotiation_class = ErrorsAsJSON

    def get(self, request: Request, number: str) -> HttpResponseBase:
        release = _release_or_404(number)
        return release_download(
            request,
            release,
            tag="-stix",
            filename=f"claimsdb-release-{release.number}.stix.json",
            content_type=f"{STIX_MEDIA_TYPE}; charset=utf-8",
            body=utf8_chunks(iter_stix_bundle(release)),
        )


@schema.RELEASE_CSV
class ReleaseCSVView(ReleaseBase):
    content_negotiation_class = ErrorsAsJSON

    def get(self, request: Request, number: str) -> HttpResponseBase:
        release = _release_or_404(number)
        return release_download(
            request,
            release,
            tag="-csv",
            filename=f"claimsdb-release-{release.number}.csv.zip",
            content_type="application/zip",
            body=release_csv_zip(release),
        )


def stix_extension_schema(request: HttpRequest) -> HttpResponse:
    """The JSON Schema the STIX exports' extension definition names: a file, not an API
    operation (it answers nothing but itself)."""
    response = HttpResponse(
        EXTENSION_SCHEMA_PATH.read_bytes(), content_type="application/schema+json"
    )
    response["Cache-Control"] = "public, max-age=86400"
    return response
