"""Refuse, before any view reads it, a request whose body is larger than any upload may be
(413), or whose path, query string or form fields hold a NUL character or a lone surrogate
(400 ``input.invalid_text``: no database stores them alike, so they must never reach a
query or a service, whatever endpoint they are sent to). JSON bodies are checked by their
parser (``records/jsontext.py``).

Record documents are bounded by ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (Django refuses larger
bodies when they are read; the API answers 413). A results file streams to a temporary file
instead, so its bound is checked here, from ``Content-Length``, and again by the importer
while it reads. A body sent in chunks (``Transfer-Encoding: chunked``) has no length: it is
read here, up to the bound of what it may be, into a temporary file that the view then
reads as a body of known length; one longer than its bound is answered 413 as soon as it
passes it.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse

from claimsdb.codes import RequestCode
from claimsdb.limits import UPLOAD_MAX_BYTES
from claimsdb.records.jsontext import printable, text_problem

API_PREFIX = "/api/"
# where a results file may be sent as the raw body
UPLOAD_PREFIXES = ("/api/v1/imports/",)
_CHUNK = 64 * 1024


class RequestSizeLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > UPLOAD_MAX_BYTES:
            return too_large(request, length, UPLOAD_MAX_BYTES)
        if not request.META.get("CONTENT_LENGTH") and is_chunked(request):
            refusal = read_chunked_body(request)
            if refusal is not None:
                return refusal
        refusal = invalid_text(request)
        if refusal is not None:
            return refusal
        return self.get_response(request)


def is_chunked(request: HttpRequest) -> bool:
    encoding = request.META.get("HTTP_TRANSFER_ENCODING", "")
    return "chunked" in encoding.lower()


def body_bound(request: HttpRequest) -> int:
    """The most a body may be: a results file's bound where one is uploaded, a document's
    elsewhere."""
    if request.path_info.startswith(UPLOAD_PREFIXES) or request.content_type.startswith(
        "multipart/"
    ):
        return UPLOAD_MAX_BYTES
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE or UPLOAD_MAX_BYTES


def read_chunked_body(request: HttpRequest) -> HttpResponse | None:
    """Read a body of unknown length into a temporary file (in memory up to
    ``FILE_UPLOAD_MAX_MEMORY_SIZE``) and hand it on as a body of that length; 413 once it
    passes its bound, before the rest is read. Under the ASGI server (``make serve``),
    ``claimsdb/asgi.py`` has already read the body into a file, bounded by
    ``UPLOAD_MAX_BYTES``: its size is checked against the request's own bound here."""
    bound = body_bound(request)
    source = request.META.get("wsgi.input")
    if source is None:
        stream = request._stream  # type: ignore[attr-defined]  # ASGIRequest's body file
        size = stream.seek(0, 2)
        stream.seek(0)
        if size > bound:
            return too_large(request, size, bound)
        request.META["CONTENT_LENGTH"] = str(size)
        return None
    spool = tempfile.SpooledTemporaryFile(max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE)
    size = 0
    while True:
        chunk = source.read(_CHUNK)
        if not chunk:
            break
        size += len(chunk)
        if size > bound:
            spool.close()
            return too_large(request, size, bound, at_least=True)
        spool.write(chunk)
    spool.seek(0)
    request._body_spool = spool  # type: ignore[attr-defined]  # closed with the request
    request.META["CONTENT_LENGTH"] = str(size)
    request._stream = LimitedStream(spool, size)  # type: ignore[attr-defined]
    return None


def invalid_text(request: HttpRequest) -> HttpResponse | None:
    """400 ``input.invalid_text`` for the first NUL or lone surrogate in the path, the query
    string or the form fields (a form sent to the API in parts is an upload: the importer
    checks its own fields)."""
    problem = text_problem(request.path_info, "")
    if problem is not None:
        return refused(request, 400, problem.code, "the URL's path " + problem.message, "")
    for name, values in request.GET.lists():
        for text in (name, *values):
            problem = text_problem(text, printable(name))
            if problem is not None:
                return refused(request, 400, problem.code, problem.message, problem.path)
    if request.method != "POST" or not is_form(request):
        return None
    try:
        fields = request.POST
    except (RequestDataTooBig, TooManyFieldsSent):
        return None  # the view reads the body again and refuses it as it always does
    for name, values in fields.lists():
        for text in (name, *values):
            problem = text_problem(text, printable(name))
            if problem is not None:
                return refused(request, 400, problem.code, problem.message, problem.path)
    return None


def is_form(request: HttpRequest) -> bool:
    if request.content_type == "application/x-www-form-urlencoded":
        return True
    return request.content_type == "multipart/form-data" and not request.path_info.startswith(
        API_PREFIX
    )


def too_large(
    request: HttpRequest, length: int, bound: int = UPLOAD_MAX_BYTES, at_least: bool = False
) -> HttpResponse:
    message = too_large_message(length, bound, at_least)
    return refused(request, 413, RequestCode.TOO_LARGE, message, "")


def too_large_message(length: int, bound: int = UPLOAD_MAX_BYTES, at_least: bool = False) -> str:
    size = f"at least {length}" if at_least else str(length)
    return f"the request body is {size} bytes; at most {bound} are accepted (docs/limits.md)"


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
