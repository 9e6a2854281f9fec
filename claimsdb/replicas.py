"""Read replicas: which reads may be served by a PostgreSQL streaming replica (docs/operations.md).

``DATABASE_REPLICA_URLS`` adds replicas (aliases ``replica1``, ``replica2``…). A read goes
to a replica only when all of these hold, and to the primary (``default``) otherwise:

* it belongs to a ``GET``/``HEAD`` request that may see data a few seconds old — a reader
  without a role (anonymous, or signed in without one: they see released records), or a
  page that is the same for everyone a moment later: search, release pages and feeds
  (``REPLICA_VIEWS``);
* the request's user has not written in the last ``REPLICA_STICKY_SECONDS``
  (read-your-writes): a browser carries a cookie set by every write; a tool writing with
  an API token has no cookie jar, so a write authenticated by a token pins that token to
  the primary in the cache — the database's own cache table, which every worker process
  shares — under the token's SHA-256, for as long;
* no transaction is open on the primary (a read inside a write is part of the write);
* it is not a read of accounts, sessions or tokens (signing in must see the account as
  it is now);
* the replica is reachable, streaming, and less than ``REPLICA_MAX_LAG_SECONDS`` behind.
  A replica that fails this is skipped for a few seconds and the primary serves the read.
  A replica that fails between two checks (a read on it raises ``OperationalError`` or
  ``InterfaceError``) is marked failed at once, and the request is answered again from
  the primary: no read fails because a replica died (``ReplicaReadMiddleware``).

Every write goes to the primary, so the ledger lock, the staleness checks (``If-Match``,
the edit forms' revision) and everything read while writing use the primary.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connections
from django.http import HttpRequest, HttpResponse
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from claimsdb.access import may_read_working_state

logger = logging.getLogger("claimsdb.replicas")

# Apps whose rows decide who the user is (and the sign-in throttle's counters, kept in the
# cache table): always read from the primary.
PRIMARY_ONLY_APPS = {"auth", "sessions", "authtoken", "admin", "contenttypes", "django_cache"}
# Pages and endpoints whose reads may be a moment old for every reader.
REPLICA_VIEWS = {
    "index",
    "release-list",
    "release-detail",
    "release-feed",
    "case-feed",
    "api-release-list",
    "api-release-detail",
    "api-release-bundle",
}
WROTE_COOKIE = "claimsdb_wrote"
TOKEN_PIN_PREFIX = "claimsdb.replicas.wrote:"  # + the SHA-256 of a token that wrote
SAFE_METHODS = {"GET", "HEAD"}

_replica_allowed: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "replica_allowed", default=False
)


def replica_aliases() -> list[str]:
    return list(getattr(settings, "DATABASE_REPLICAS", []))


# --- replica health ---------------------------------------------------------------------


@dataclass
class _Health:
    usable: bool
    checked_at: float
    reason: str = ""


_health: dict[str, _Health] = {}

HEALTH_SQL = """
SELECT pg_is_in_recovery(),
       (SELECT status FROM pg_stat_wal_receiver LIMIT 1),
       CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
            ELSE COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 1e9)
       END
"""


def check_replica(alias: str) -> _Health:
    """Ask the replica whether it is streaming and how far behind it is."""
    max_lag = float(getattr(settings, "REPLICA_MAX_LAG_SECONDS", 5))
    now = time.monotonic()
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute(HEALTH_SQL)
            in_recovery, status, lag = cursor.fetchone()
    except Exception as exc:
        connections[alias].close()
        return _Health(False, now, f"unreachable: {type(exc).__name__}: {exc}".strip())
    if not in_recovery:
        return _Health(False, now, "not a replica (not in recovery)")
    if status is not None and status != "streaming":
        return _Health(False, now, f"WAL receiver is {status or 'not running'}")
    if float(lag) > max_lag:
        return _Health(False, now, f"{float(lag):.1f} s behind (limit {max_lag:g} s)")
    return _Health(True, now)


def replica_usable(alias: str) -> bool:
    """Whether ``alias`` may serve reads now; re-checked at most every
    ``REPLICA_CHECK_SECONDS`` (a failed replica is retried after that too)."""
    interval = float(getattr(settings, "REPLICA_CHECK_SECONDS", 1))
    known = _health.get(alias)
    if known is None or time.monotonic() - known.checked_at >= interval:
        known = _health[alias] = check_replica(alias)
        if not known.usable:
            logger.warning("replica %s skipped, reads go to the primary: %s", alias, known.reason)
    return known.usable


def mark_failed(alias: str, reason: str) -> None:
    """Skip ``alias`` until its next check is due: a read on it has just failed."""
    _health[alias] = _Health(False, time.monotonic(), reason)
    logger.warning("replica %s failed, reads go to the primary: %s", alias, reason)


def failed_replicas() -> list[str]:
    """The replicas whose connection in this thread has raised a driver error (Django's
    ``errors_occurred``, set by any error other than a refused value or constraint)."""
    return [alias for alias in replica_aliases() if connections[alias].errors_occurred]


def forget_replica_health() -> None:
    _health.clear()


def choose_replica() -> str | None:
    aliases = replica_aliases()
    random.shuffle(aliases)
    for alias in aliases:
        if replica_usable(alias):
            return alias
    return None


# --- the router -------------------------------------------------------------------------


class ReplicaRouter:
    """Sends the reads the middleware allows to a healthy replica; everything else, and
    every write and migration, to the primary."""

    def db_for_read(self, model, **hints) -> str | None:
        if not _replica_allowed.get() or not replica_aliases():
            return DEFAULT_DB_ALIAS
        if model._meta.app_label in PRIMARY_ONLY_APPS:
            return DEFAULT_DB_ALIAS
        if connections[DEFAULT_DB_ALIAS].in_atomic_block:
            return DEFAULT_DB_ALIAS
        return choose_replica() or DEFAULT_DB_ALIAS

    def db_for_write(self, model, **hints) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints) -> bool:
        return True  # replicas hold the same rows as the primary

    def allow_migrate(self, db, app_label, model_name=None, **hints) -> bool:
        return db == DEFAULT_DB_ALIAS


# --- the middleware ---------------------------------------------------------------------


def _recently_wrote(request: HttpRequest) -> bool:
    try:
        until = float(request.COOKIES.get(WROTE_COOKIE, "0"))
    except ValueError:
        return False
    return until > time.time()


def _token_pin_key(key: str) -> str:
    """The cache key of a token's pin: its SHA-256, so the cache never holds a token."""
    return TOKEN_PIN_PREFIX + hashlib.sha256(key.encode()).hexdigest()


def _header_token(request: HttpRequest) -> str | None:
    """The token of an ``Authorization: Token <key>`` header, read as DRF reads it."""
    parts = request.headers.get("Authorization", "").split()
    if len(parts) == 2 and parts[0].lower() == TokenAuthentication.keyword.lower():
        return parts[1]
    return None


def _pin_token(request: HttpRequest, sticky: int) -> None:
    """A write authenticated by an API token: that token's reads go to the primary for the
    next ``sticky`` seconds, in every worker process."""
    auth = getattr(request, "auth", None)  # set by DRF's authentication, for the view
    if isinstance(auth, Token):
        cache.set(_token_pin_key(auth.key), 1, timeout=sticky)


def _token_recently_wrote(request: HttpRequest) -> bool:
    key = _header_token(request)
    return key is not None and cache.get(_token_pin_key(key)) is not None


def _public_reader(request: HttpRequest) -> bool:
    """A reader who sees only released records: no credentials of any kind, or a signed-in
    account without a role. A request with an Authorization header is a tool whose token
    may carry a role: it reads the primary."""
    if "Authorization" in request.headers:
        return False
    return not may_read_working_state(request.user)


class ReplicaReadMiddleware:
    """Decides, per request, whether its reads may use a replica; marks writers so their
    next reads come from the primary. Place it after AuthenticationMiddleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _replica_allowed.set(False)
        try:
            response = self.get_response(request)
            if _replica_allowed.get() and response.status_code >= 500:
                response = self._again_on_the_primary(request, response)
        finally:
            _replica_allowed.reset(token)
        if request.method not in SAFE_METHODS and replica_aliases():
            sticky = int(getattr(settings, "REPLICA_STICKY_SECONDS", 10))
            _pin_token(request, sticky)
            response.set_cookie(
                WROTE_COOKIE,
                f"{time.time() + sticky:.0f}",
                max_age=sticky,
                httponly=True,
                samesite="Lax",
                secure=settings.SESSION_COOKIE_SECURE,
            )
        return response

    def _again_on_the_primary(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        """A read that failed because its replica did: mark the replica failed and answer
        the request again from the primary (it is a GET or HEAD, which writes nothing)."""
        failed = failed_replicas()
        if not failed:
            return response
        for alias in failed:
            mark_failed(alias, f"a read failed (HTTP {response.status_code})")
            try:
                connections[alias].close()
            finally:
                connections[alias].errors_occurred = False
        _replica_allowed.set(False)
        request.replica_failed = failed
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        if not replica_aliases() or request.method not in SAFE_METHODS:
            return None
        if _recently_wrote(request) or getattr(request, "replica_failed", None):
            return None
        match = request.resolver_match
        if match and match.url_name in REPLICA_VIEWS:
            # for everyone, but a token that has just written (a request with a token is
            # not a public reader, so this is the one place its pin is looked up)
            if not _token_recently_wrote(request):
                _replica_allowed.set(True)
        elif _public_reader(request):
            _replica_allowed.set(True)
        return None
