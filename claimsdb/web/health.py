"""Health and readiness probes for load balancers and orchestrators (docs/operations.md).

``/healthz`` answers 200 when the app can reach its database and 503, with the reason,
when it cannot. ``/readyz`` also requires every migration to be applied, so a new release
of the code is not sent traffic before ``migrate`` has run.

Both are answered by a middleware placed first in ``MIDDLEWARE``: a probe needs no login,
must not be redirected to HTTPS (probes speak plain HTTP to the app server), and usually
names the server by an address that is not in ``ALLOWED_HOSTS`` — so it is answered
before any of that is looked at. Nothing is read but the database's pulse and the
migration table; no record data is ever shown.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, HttpResponse

logger = logging.getLogger("claimsdb.health")

PROBES = {"/healthz": "health", "/readyz": "readiness"}


def database_problem(alias: str = DEFAULT_DB_ALIAS) -> str | None:
    """Why the database cannot be used, or None when a query goes through."""
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any driver error means "not reachable"
        return f"database {alias!r} unreachable: {type(exc).__name__}: {exc}".strip()
    return None


def pending_migrations(alias: str = DEFAULT_DB_ALIAS) -> list[str]:
    """The migrations not yet applied to the database (``app.name``), in plan order."""
    connection = connections[alias]
    executor = MigrationExecutor(connection)
    targets = executor.loader.graph.leaf_nodes()
    return [f"{m.app_label}.{m.name}" for m, _backwards in executor.migration_plan(targets)]


def probe(kind: str) -> tuple[int, dict]:
    problem = database_problem()
    if problem is not None:
        return 503, {"status": "unavailable", "reason": problem}
    if kind == "readiness":
        try:
            pending = pending_migrations()
        except Exception as exc:
            return 503, {"status": "unavailable", "reason": f"migration state unreadable: {exc}"}
        if pending:
            return 503, {
                "status": "unavailable",
                "reason": f"{len(pending)} migration(s) not applied; run manage.py migrate",
                "pending_migrations": pending,
            }
    return 200, {"status": "ok", "database": "ok"}


class HealthCheckMiddleware:
    """Answers ``GET``/``HEAD`` on ``/healthz`` and ``/readyz``; passes everything else on."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        kind = PROBES.get(request.path_info.rstrip("/") or "/")
        if kind is None:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            response = HttpResponse(status=405)
            response["Allow"] = "GET, HEAD"
            return response
        status, body = probe(kind)
        if status != 200:
            logger.warning("%s probe failed: %s", kind, body["reason"])
        response = HttpResponse(
            json.dumps(body, sort_keys=True), status=status, content_type="application/json"
        )
        response["Cache-Control"] = "no-store"
        return response
