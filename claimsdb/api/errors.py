"""The one error shape of the API, and the exception handler that produces it.

Every error response, whatever raised it, is::

    {"status": 400, "title": "The change was refused",
     "errors": [{"code": "scope.non_attribution", "message": "…",
                 "path": "attributions[0].figure"}]}

``code`` is stable and namespaced (claimsdb/codes.py: ``revision.stale``,
``permission.denied``; Django's and DRF's own bare codes are reported as the namespaced
codes ``codes.API_CODES`` maps them to, ``not_authenticated`` as ``auth.not_authenticated``);
``path`` points into the document sent (empty
when the problem is the request as a whole; a query parameter or header name when the
problem lies there); ``record`` appears when the problem lies in another record than the
one written.

``exception_handler`` is the project's ``REST_FRAMEWORK["EXCEPTION_HANDLER"]``: views raise
the services' exceptions (``RuleViolations``, ``StaleRevision``, ``RecordExists``,
``RecordNotFound``, ``PermissionDenied``) or DRF's, and never build error bodies by hand.
``not_found_handler`` is the project's ``handler404``: a URL under ``/api/`` that no
endpoint matches gets a 404 in the same shape, not the site's HTML page.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import Http404, HttpRequest, HttpResponse
from django.views.defaults import page_not_found
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from claimsdb import unavailable
from claimsdb.codes import RecordCode, RequestCode, RevisionCode, ServerCode, api_code
from claimsdb.records import (
    PermissionDenied,
    RecordExists,
    RecordNotFound,
    RuleViolation,
    RuleViolations,
    StaleRevision,
)

logger = logging.getLogger("claimsdb.api")
database_unavailable = unavailable.database_unavailable

TITLES = {
    400: "The request was refused",
    401: "Authentication required",
    403: "Permission denied",
    404: "Not found",
    405: "Method not allowed",
    406: "Not acceptable",
    409: "Conflict",
    412: "The record has changed",
    413: "Request too large",
    415: "Unsupported media type",
    428: "Precondition required",
    429: "Too many requests",
    500: "Internal error",
}
CHANGE_REFUSED = "The change was refused"


def error_body(status: int, title: str, violations: Iterable[RuleViolation]) -> dict:
    """The one error shape; every code in it namespaced (``codes.api_code``)."""
    errors = [{**v.as_dict(), "code": api_code(v.code)} for v in violations]
    return {"status": status, "title": title, "errors": errors}


def error_response(
    status: int, title: str, violations: Iterable[RuleViolation], headers: dict | None = None
) -> Response:
    return Response(error_body(status, title, violations), status=status, headers=headers)


class RequestViolations(exceptions.APIException):
    """Problems with the request itself (a query parameter, a header), as violations: a 400,
    or another status such as 428 for a missing precondition."""

    status_code = status.HTTP_400_BAD_REQUEST

    def __init__(self, violations: list[RuleViolation], status_code: int = 400):
        self.violations = violations
        self.status_code = status_code
        super().__init__("; ".join(str(v) for v in violations))


PRECONDITION_REQUIRED = (
    "this write replaces a whole record and needs an If-Match header naming the revision it "
    'was based on (the ETag of your GET, e.g. If-Match: "14")'
)


def precondition_required() -> RequestViolations:
    """A whole-record PUT without ``If-Match`` (HTTP 428)."""
    violation = RuleViolation(RevisionCode.PRECONDITION_REQUIRED, PRECONDITION_REQUIRED, "If-Match")
    return RequestViolations([violation], status_code=428)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Turn any exception raised by an API view into the one error shape."""
    if isinstance(exc, StaleRevision):
        return _refusal(412, TITLES[412], exc.violations)
    if isinstance(exc, RecordExists):
        return _refusal(409, TITLES[409], exc.violations)
    if isinstance(exc, RuleViolations):
        return _refusal(400, CHANGE_REFUSED, exc.violations)
    if isinstance(exc, RecordNotFound):
        violation = RuleViolation(RecordCode.NOT_FOUND, f"there is no {exc.kind} {exc.key}", "")
        return _refusal(404, TITLES[404], [violation])
    if isinstance(exc, PermissionDenied):
        return _refusal(403, TITLES[403], [exc.violation])
    if isinstance(exc, RequestViolations):
        return _refusal(exc.status_code, TITLES.get(exc.status_code, ""), exc.violations)
    if isinstance(exc, RequestDataTooBig | TooManyFieldsSent | TooManyFilesSent):
        return _refusal(413, TITLES[413], [too_large_violation()])
    if isinstance(exc, Http404 | DjangoPermissionDenied | exceptions.APIException):
        response = drf_exception_handler(exc, context)
        if response is None:  # pragma: no cover - DRF handles all three
            return None
        detail = exc.detail if isinstance(exc, exceptions.APIException) else response.data
        violations = list(violations_from_detail(detail))
        response.data = error_body(
            response.status_code, TITLES.get(response.status_code, ""), violations
        )
        return response
    if database_unavailable(exc):
        logger.warning("database unreachable, answered 503: %s: %s", type(exc).__name__, exc)
        response = _refusal(
            503, unavailable.TITLE, [RuleViolation(ServerCode.UNAVAILABLE, unavailable.MESSAGE)]
        )
        response["Retry-After"] = unavailable.retry_after()
        response["Cache-Control"] = "no-store"
        return response
    logger.exception("unhandled error in an API view", exc_info=exc)
    violation = RuleViolation(ServerCode.ERROR, "an internal error occurred; it has been logged")
    return _refusal(500, TITLES[500], [violation])


def too_large_violation() -> RuleViolation:
    return RuleViolation(
        RequestCode.TOO_LARGE,
        f"the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes, the "
        "most a document may be (docs/limits.md)",
        "",
    )


def _refusal(status_code: int, title: str, violations: list[RuleViolation]) -> Response:
    set_rollback()
    return error_response(status_code, title, violations)


def violations_from_detail(detail: Any, path: str = "") -> Iterator[RuleViolation]:
    """Flatten DRF's error detail (strings, lists, nested dicts) into violations with paths.

    ``{"revision": [ErrorDetail("required")]}`` → path ``revision``; ``non_field_errors`` and
    ``detail`` stand for the request as a whole (empty path).
    """
    if isinstance(detail, dict):
        for name, value in detail.items():
            if name in {"non_field_errors", "detail"}:
                sub = path
            else:
                sub = f"{path}.{name}" if path else str(name)
            yield from violations_from_detail(value, sub)
    elif isinstance(detail, list):
        nested = any(isinstance(item, dict | list) for item in detail)
        for index, item in enumerate(detail):
            yield from violations_from_detail(item, f"{path}[{index}]" if nested else path)
    else:
        code = getattr(detail, "code", None) or RequestCode.INVALID
        yield RuleViolation(api_code(str(code)), str(detail), path)


API_PREFIX = "/api/"


def not_found_handler(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """The project's ``handler404``: the API's error shape for any path under ``/api/``
    (``not_found``), the site's 404 page elsewhere. (With ``DEBUG`` on, Django shows its
    own debugging page instead, as for every 404.)"""
    if not request.path_info.startswith(API_PREFIX):
        return page_not_found(request, exception)
    violation = RuleViolation(
        RequestCode.NOT_FOUND,
        f"there is no API endpoint at {request.path}; the endpoints are listed in the schema "
        "at /api/v1/schema/",
        "",
    )
    body = json.dumps(error_body(404, TITLES[404], [violation]), ensure_ascii=False, sort_keys=True)
    return HttpResponse(body, status=404, content_type="application/json")
