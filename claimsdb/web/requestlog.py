"""One log line per request, with a request id that ties it to its errors (docs/operations.md).

Every request gets an id: the caller's ``X-Request-ID`` when it sends a sane one (a proxy
in front usually does), a fresh one otherwise. The id is returned in ``X-Request-ID`` and
stamped on every log record emitted while the request runs (``RequestIdFilter``), so an
error's traceback can be found from the access line, and the reverse.

The access line is written after the response is built::

    request id=4f0c… method=GET path=/cases/ status=200 duration_ms=12.4 user=analyst
"""

from __future__ import annotations

import contextvars
import logging
import re
import time
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.encoding import escape_uri_path
from django.utils.functional import SimpleLazyObject, empty

logger = logging.getLogger("claimsdb.request")

_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
_SANE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def current_request_id() -> str:
    return _request_id.get()


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` to every record, so formatters can always print it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _request_id.get()
        return True


def _user_label(request: HttpRequest) -> str:
    """The user the request ran as; never loads a session just for the log line."""
    user = getattr(request, "user", None)
    if isinstance(user, SimpleLazyObject) and user._wrapped is empty:
        return "-"  # nothing in the request looked at the user: it ran anonymously
    if user is None or not user.is_authenticated:
        return "-"
    return user.get_username()


class RequestLogMiddleware:
    """Assigns the request id and logs the access line (place it near the top)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        sent = request.headers.get("X-Request-ID", "")
        request_id = sent if _SANE_ID.match(sent) else uuid.uuid4().hex
        request.request_id = request_id
        token = _request_id.set(request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            response["X-Request-ID"] = request_id
            logger.info(
                "request id=%s method=%s path=%s status=%s duration_ms=%.1f user=%s",
                request_id,
                request.method,
                escape_uri_path(request.path),  # no spaces or newlines in the line
                response.status_code,
                (time.perf_counter() - started) * 1000,
                _user_label(request),
            )
            return response
        finally:
            _request_id.reset(token)
