"""503, not 500, while the database cannot be reached (docs/operations.md).

A request that fails because the database is down, restarting or unreachable is not the
server's bug, and the client can do nothing but wait: it gets 503 with ``Retry-After``
(``DATABASE_RETRY_AFTER_SECONDS``), in the API's error shape (``server.unavailable``)
under ``/api/`` and as a plain page elsewhere. The page is built without templates,
context processors or the session, all of which would read the database again.

Django's ``OperationalError`` and ``InterfaceError`` are what the drivers raise when they
cannot connect, lose their connection, or (SQLite) find the database locked past its
timeout; a query the database refuses for what it says (a bad value, a broken constraint)
raises ``DataError``/``IntegrityError``/``ProgrammingError`` and stays a 500.

``server_error`` is the project's ``handler500`` (every exception no view handled passes
through it, from any middleware); the API's exception handler answers API views the same
way (``api/errors.py``).
"""

from __future__ import annotations

import json
import logging
import sys

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.views.defaults import server_error as django_server_error

logger = logging.getLogger("claimsdb.unavailable")

API_PREFIX = "/api/"
TITLE = "Service unavailable"
MESSAGE = "the database cannot be reached for now; try again in a few seconds"
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>claimsdb: {title}</title></head>
<body><h1>{title}</h1><p>claimsdb cannot reach its database for the moment. Nothing is
lost; please try again in a few seconds.</p></body></html>
"""


def database_unavailable(exc: BaseException | None) -> bool:
    """Whether ``exc`` says the database could not be reached (rather than refused a
    query)."""
    return isinstance(exc, OperationalError | InterfaceError)


def retry_after() -> str:
    return str(int(getattr(settings, "DATABASE_RETRY_AFTER_SECONDS", 5)))


def error_body() -> dict:
    return {
        "status": 503,
        "title": TITLE,
        "errors": [{"code": "server.unavailable", "message": MESSAGE, "path": ""}],
    }


def unavailable_response(request: HttpRequest) -> HttpResponse:
    """The 503 for ``request``: JSON under ``/api/``, a plain page elsewhere."""
    if request.path_info.startswith(API_PREFIX):
        body = json.dumps(error_body(), ensure_ascii=False, sort_keys=True)
        response = HttpResponse(body, status=503, content_type="application/json")
    else:
        response = HttpResponse(
            PAGE.format(title=TITLE), status=503, content_type="text/html; charset=utf-8"
        )
    response["Retry-After"] = retry_after()
    response["Cache-Control"] = "no-store"
    return response


def server_error(request: HttpRequest) -> HttpResponse:
    """The project's ``handler500``: 503 while the database is unreachable, Django's own
    500 page otherwise."""
    exc = sys.exc_info()[1]
    if database_unavailable(exc):
        logger.warning("database unreachable, answered 503: %s: %s", type(exc).__name__, exc)
        return unavailable_response(request)
    return django_server_error(request)
