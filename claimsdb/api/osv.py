"""A release's affected components as OSV documents over REST (docs/coverage.md):
``GET /api/v1/releases/<n>/osv/`` — one JSON array of OSV 1.6 documents, the same bytes as
``manage.py export_records --release <n> --format osv``, streamed a batch of cases at a
time and cacheable for ever (a release never changes)."""

from __future__ import annotations

from django.http import HttpResponseNotModified, StreamingHttpResponse
from django.http.response import HttpResponseBase
from rest_framework.request import Request

from claimsdb import http_caching
from claimsdb.exports.osv import iter_osv_array, release_osv_documents
from claimsdb.records.stream import utf8_chunks

from .releases import ReleaseBase, _release_or_404
from .schema.coverage import RELEASE_OSV


@RELEASE_OSV
class ReleaseOSVView(ReleaseBase):
    def get(self, request: Request, number: str) -> HttpResponseBase:
        release = _release_or_404(number)
        etag = f'"release-{release.number}-osv"'
        response: HttpResponseBase
        if etag in {t.strip() for t in request.headers.get("If-None-Match", "").split(",")}:
            response = HttpResponseNotModified()
        else:
            response = StreamingHttpResponse(
                utf8_chunks(iter_osv_array(release_osv_documents(release))),
                content_type="application/json; charset=utf-8",
            )
        response["ETag"] = etag
        response["Cache-Control"] = f"public, {http_caching.IMMUTABLE}"
        response["Content-Disposition"] = (
            f'inline; filename="claimsdb-release-{release.number}-osv.json"'
        )
        return response
