"""Refuse, before any view reads it, a request whose declared body is larger than any upload
may be (413), or whose query string holds a NUL character (400: no database stores it alike,
so it must never reach a query, whatever endpoint it is sent to).

Record documents are bounded by ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (Django refuses larger
bodies when they are read; the API answers 413). A results file streams to a temporary file
instead, so its bound is checked here, from ``Content-Length``, and again by the importer
while it reads (a body sent in chunks has no length).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from claimsdb.codes import DrfCode, RequestCode
from claimsdb.limits import UPLOAD_MAX_BYTES

API_PREFIX = "/api/"


class RequestSizeLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > UPLOAD_MAX_BYTES:
            return too_large(request, length)
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                return refused(
                    request, 400, DrfCode.INVALID, "must not contain NUL characters", name
                )
        return self.get_response(request)


def too_large(request: HttpRequest, length: int) -> HttpResponse:
    return refused(request, 413, RequestCode.TOO_LARGE, too_large_message(length), "")


def too_large_message(length: int) -> str:
    return (
        f"the request body is {length} bytes; at most {UPLOAD_MAX_BYTES} are accepted "
        "(docs/limits.md)"
    )


TITLES = {400: "The request was refused", 413: "Request too large"}


def refused(request: HttpRequest, status: int, code: str, message: str, path: str):
    """The API's error shape under /api/, a line of text elsewhere."""
    return refused_response(request.path_info, status, code, message, path)


def refused_response(path_info: str, status: int, code: str, message: str, path: str):
    """``refused`` for a request known by its path alone (claimsdb/asgi.py)."""
    if path_info.startswith(API_PREFIX):
        body = {
            "status": status,
            "title": TITLES[status],
            "errors": [{"code": code, "message": message, "path": path}],
        }
        return HttpResponse(
            json.dumps(body, sort_keys=True), status=status, content_type="application/json"
        )
    text = f"{path}: {message}" if path else message
    return HttpResponse(
        text[:1].upper() + text[1:] + ".", status=status, content_type="text/plain; charset=utf-8"
    )
