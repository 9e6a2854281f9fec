"""Releases over REST: anyone reads them; reviewers publish them.

* ``GET /api/v1/releases/`` — releases, newest first, with counts by change;
* ``POST /api/v1/releases/`` with ``{"notes": "…"}`` — publish one (reviewers; 201);
* ``GET /api/v1/releases/<n>/`` — one release and a page of its entries;
* ``GET /api/v1/releases/<n>/bundle.json`` — the release as a ``claimsdb.bundle/1``, the
  same bytes as ``manage.py export_records --release <n>``, cacheable for ever.
"""

from __future__ import annotations

import re
from typing import Any

from django.http import HttpResponseNotModified, StreamingHttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claimsdb import public
from claimsdb.models import Release, ReleaseChange
from claimsdb.records import RuleViolation, iter_pretty_bundle
from claimsdb.records.stream import utf8_chunks
from claimsdb.selectors.releases import release_entry_list, with_previous_revisions
from claimsdb.services.permissions import has_role
from claimsdb.services.releases import release_publish

from . import openapi
from .common import CanonicalJSONRenderer, DocumentJSONParser, NoFormSerializer, Pagination
from .errors import RequestViolations

RELEASE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "number": {"type": "integer", "example": 1},
        "published_at": {"type": "string", "format": "date-time"},
        "notes": {"type": "string"},
        "last_revision": {
            "type": "integer",
            "description": "the ledger's latest revision when the release was published",
        },
        "counts": {
            "type": "object",
            "properties": {change: {"type": "integer"} for change in ReleaseChange.values},
        },
        "url": {"type": "string", "format": "uri"},
        "page": {"type": "string", "format": "uri"},
        "bundle": {"type": "string", "format": "uri"},
    },
}
ENTRY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "kind": {"type": "string", "enum": ["case", "source", "rule", "method"]},
        "key": {"type": "string"},
        "change": {"type": "string", "enum": list(ReleaseChange.values)},
        "revision": {"type": "integer", "description": "the revision the public sees"},
        "previous_revision": {
            "type": "integer",
            "nullable": True,
            "description": "the revision the previous release published, if any",
        },
        "page": {"type": "string", "format": "uri"},
    },
}
PAGE_LINK = {"type": "string", "format": "uri", "nullable": True}
RELEASE_DETAIL_SCHEMA = {
    "allOf": [
        RELEASE_SCHEMA,
        {
            "type": "object",
            "properties": {
                "entries": {
                    "type": "array",
                    "items": ENTRY_SCHEMA,
                    "description": "one page of the entries (`page`, `page_size`), by kind and key",
                },
                "entries_count": {"type": "integer", "description": "all the entries"},
                "entries_next": {**PAGE_LINK, "description": "the next page of entries"},
                "entries_previous": {**PAGE_LINK, "description": "the previous page"},
            },
        },
    ]
}
BUNDLE_SCHEMA = {
    "type": "object",
    "properties": {
        "format": {"type": "string", "enum": ["claimsdb.bundle/1"]},
        **{
            f"{kind}s": {"type": "array", "items": openapi.document_ref(kind)}
            for kind in ("method", "source", "case", "rule")
        },
    },
}
RELEASE_PAGE_SCHEMA = {
    "type": "object",
    "properties": {
        "count": {"type": "integer"},
        "next": {"type": "string", "format": "uri", "nullable": True},
        "previous": {"type": "string", "format": "uri", "nullable": True},
        "results": {"type": "array", "items": RELEASE_SCHEMA},
    },
}


class PublishRequest(serializers.Serializer):
    """The body of ``POST /api/v1/releases/`` (documentation: the view reads it itself)."""

    notes = serializers.CharField(help_text="what the release publishes and why")


RELEASE_NUMBER = re.compile(r"[1-9][0-9]{0,8}")
NUMBER_PARAMETER = OpenApiParameter(
    "number", OpenApiTypes.INT, OpenApiParameter.PATH, description="the release number"
)
# Reads need no credentials: the schema says so with an empty security requirement.
PUBLIC_READ = [{"tokenAuth": []}, {"cookieAuth": []}, {}]


class ReleasePermission(BasePermission):
    """Anyone reads releases (they are the public record); only reviewers publish."""

    code = "permission.denied"
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
    }


def release_detail(request: Request, release: Release) -> dict[str, Any]:
    """The release and one page of its entries (``?page=``, ``?page_size=``), by record kind
    and key, with ``entries_count`` and the ``entries_next``/``entries_previous`` links."""
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
                public.revision_path(entry.record_kind, entry.record_key, entry.revision.number)
            ),
        }
        for entry in with_previous_revisions(release, list(page))
    ]
    return {
        **release_summary(request, release),
        "entries": entries,
        "entries_count": paginator.page.paginator.count,
        "entries_next": paginator.get_next_link(),
        "entries_previous": paginator.get_previous_link(),
    }


def _release_or_404(number: int | str) -> Release:
    text = str(number)
    release = public.release_get(int(text)) if RELEASE_NUMBER.fullmatch(text) else None
    if release is None:
        raise NotFound(f"there is no release {number}", code="release.not_found")
    return release


class ReleaseBase(APIView):
    permission_classes = [ReleasePermission]
    parser_classes = [DocumentJSONParser]
    renderer_classes = [CanonicalJSONRenderer]
    serializer_class = NoFormSerializer


class ReleaseListView(ReleaseBase):
    @extend_schema(
        operation_id="releases_list",
        summary="List releases",
        description="Every release, newest first, with its counts by change. Public.",
        tags=["releases"],
        auth=PUBLIC_READ,
        responses={200: RELEASE_PAGE_SCHEMA, **openapi.error_responses(404)},
    )
    def get(self, request: Request) -> Response:
        paginator = Pagination()
        page = paginator.paginate_queryset(Release.objects.order_by("-number"), request, view=self)
        # the counts of the page's releases only (see claimsdb.web.releases.release_list)
        counted = public.release_list().filter(number__in=[r.number for r in page])
        return paginator.get_paginated_response([release_summary(request, r) for r in counted])

    @extend_schema(
        operation_id="releases_create",
        summary="Publish a release",
        description="Publishes the latest revision of every ready case and active source, "
        "rule and method (reviewers). Refused without notes (`release.notes_required`) or "
        "when nothing changed since the previous release (`release.nothing_changed`).",
        tags=["releases"],
        request=PublishRequest,
        responses={
            201: OpenApiResponse(RELEASE_DETAIL_SCHEMA, description="the release published"),
            **openapi.error_responses(400, 401, 403),
        },
        examples=[
            OpenApiExample(
                "notes",
                value={"notes": "CP22-003 reviewed and ready."},
                request_only=True,
            )
        ],
    )
    def post(self, request: Request) -> Response:
        body = request.data
        if not isinstance(body, dict):
            raise RequestViolations(
                [RuleViolation("document.type", "the body must be an object with notes", "")]
            )
        notes = body.get("notes", "")
        if not isinstance(notes, str):
            raise RequestViolations(
                [RuleViolation("document.type", "notes must be a string", "notes")]
            )
        unknown = sorted(set(body) - {"notes"})
        if unknown:
            raise RequestViolations(
                [
                    RuleViolation(
                        "document.unknown_field", f"{name!r} is not a field of a release", name
                    )
                    for name in unknown
                ]
            )
        release = release_publish(user=request.user, notes=notes)
        data = release_detail(request, _release_or_404(release.number))
        return Response(data, status=201, headers={"Location": data["url"]})


class ReleaseDetailView(ReleaseBase):
    @extend_schema(
        operation_id="releases_retrieve",
        summary="Read a release",
        description="One release and a page of its entries (50 by default, by record kind "
        "and key; follow `entries_next`): every record the public sees in it, the revision "
        "it sees and how it changed against the previous release. Public.",
        tags=["releases"],
        auth=PUBLIC_READ,
        parameters=[
            NUMBER_PARAMETER,
            OpenApiParameter("page", OpenApiTypes.INT, OpenApiParameter.QUERY),
            OpenApiParameter("page_size", OpenApiTypes.INT, OpenApiParameter.QUERY),
        ],
        responses={200: RELEASE_DETAIL_SCHEMA, **openapi.error_responses(404)},
    )
    def get(self, request: Request, number: str) -> Response:
        return Response(release_detail(request, _release_or_404(number)))


class ReleaseBundleView(ReleaseBase):
    @extend_schema(
        operation_id="releases_bundle",
        summary="Download a release",
        description="The release as one `claimsdb.bundle/1` built from its entries' "
        "snapshots (withdrawn records included), byte-identical to `manage.py "
        "export_records --release <n>`. A release never changes: cacheable for ever. Public.",
        tags=["releases"],
        auth=PUBLIC_READ,
        parameters=[NUMBER_PARAMETER],
        responses={200: BUNDLE_SCHEMA, **openapi.error_responses(404)},
    )
    def get(self, request: Request, number: str) -> HttpResponseBase:
        release = _release_or_404(number)
        etag = f'"release-{release.number}"'
        headers = {
            "ETag": etag,
            "Cache-Control": f"public, {public.IMMUTABLE}",
            "Content-Disposition": f'inline; filename="claimsdb-release-{release.number}.json"',
        }
        if etag in {t.strip() for t in request.headers.get("If-None-Match", "").split(",")}:
            response = HttpResponseNotModified()
        else:
            # Streamed from the ledger in batches: a large release never sits in memory.
            response = StreamingHttpResponse(
                utf8_chunks(iter_pretty_bundle(public.release_bundle_lists(release))),
                content_type="application/json; charset=utf-8",
            )
        for name, value in headers.items():
            response[name] = value
        return response
