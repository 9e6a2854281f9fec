"""Throttling of password guessing, for the sign-in page and the API token endpoint alike.

Only failed attempts count, in two counters, each over a window that starts with the first
failure it counts:

* per account and client address: a few failures lock that account *from that address*;
  other people behind the same address (an office, a VPN) sign in as before;
* per account, from any address: more failures lock the account everywhere, against guessing
  spread over many addresses.

Both are checked *before* the password is: once locked, even the right password is refused
until the window ends. A successful sign-in clears its account-and-address counter. There is
no counter per address alone: it would let anyone behind a shared address lock out everybody
else there. The counters live in Django's cache (share one cache between processes in a
deployment with several). Limits: settings ``SIGNIN_FAILURES_PER_ACCOUNT_AND_ADDRESS``,
``SIGNIN_FAILURES_PER_ACCOUNT`` and ``SIGNIN_LOCKOUT_SECONDS`` (docs/limits.md).
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_login_failed
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import connections, router
from django.dispatch import receiver
from django.http import HttpRequest

from claimsdb.codes import SigninCode
from claimsdb.records.batched import model_instances

CODE = SigninCode.THROTTLED


@dataclass(frozen=True)
class Lockout:
    """A refused attempt: how long until the next one is considered."""

    retry_after: int  # seconds

    @property
    def message(self) -> str:
        minutes = max(1, math.ceil(self.retry_after / 60))
        return (
            "Too many failed sign-in attempts for this account. For your security, sign-in is "
            f"paused: try again in {minutes} minute{'s' if minutes != 1 else ''}."
        )


def client_address(request: HttpRequest | None) -> str:
    """The address the request came from, as the server sees it (``REMOTE_ADDR``)."""
    if request is None:
        return ""
    return request.META.get("REMOTE_ADDR", "") or ""


def _account(username: str) -> str:
    # the cache key names no account in clear, and user names differ only in case
    return hashlib.sha256(username.strip().casefold().encode("utf-8", "surrogatepass")).hexdigest()


def _keys(username: str, address: str) -> list[tuple[str, int]]:
    account = _account(username)
    address_hash = hashlib.sha256(address.encode()).hexdigest()[:32]
    return [
        (f"claimsdb:signin:pair:{account}:{address_hash}", _limit("ACCOUNT_AND_ADDRESS")),
        (f"claimsdb:signin:account:{account}", _limit("ACCOUNT")),
    ]


def _limit(name: str) -> int:
    return int(getattr(settings, f"SIGNIN_FAILURES_PER_{name}"))


def _window() -> int:
    return int(settings.SIGNIN_LOCKOUT_SECONDS)


def check(username: str, address: str) -> Lockout | None:
    """A lockout if either counter of this attempt has reached its limit, else None."""
    now = time.time()
    waits = []
    for key, limit in _keys(username, address):
        entry = cache.get(key)
        if entry and entry[0] >= limit:
            waits.append(max(1, math.ceil(entry[1] + _window() - now)))
    return Lockout(max(waits)) if waits else None


def record_failure(username: str, address: str) -> None:
    now = time.time()
    for key, _ in _keys(username, address):
        count, started = cache.get(key) or (0, now)
        remaining = max(1, math.ceil(started + _window() - now))
        cache.set(key, (count + 1, started), remaining)


def record_success(username: str, address: str) -> None:
    pair_key = _keys(username, address)[0][0]
    cache.delete(pair_key)


class ThrottledModelBackend(ModelBackend):
    """Django's ``ModelBackend``, refusing a locked account before it checks the password.

    Every sign-in goes through ``authenticate``: the sign-in page, the admin's and the API
    token endpoint. The lockout is left on the request (``signin_lockout``) for the view to
    explain; failures are counted by ``user_login_failed`` below.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if username is not None and request is not None:
            lockout = check(str(username), client_address(request))
            if lockout is not None:
                request.signin_lockout = lockout
                return None
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None and request is not None:
            record_success(str(username), client_address(request))
        return user

    def get_user(self, user_id):
        """The signed-in user of a request (from the session), with the rank of their role
        read in the same query (``permissions.role_rank_annotation``): the pages and the API
        decide what the request sees without a query of their own for it. Every signed-in
        request asks, so the query is put together once per thread and database
        (``_user_query``), not once per request."""
        model = get_user_model()
        try:
            pk = model._meta.pk.to_python(user_id)
        except ValidationError:
            return None
        alias = router.db_for_read(model)
        compiler, sql, params = _user_query(alias)
        with connections[alias].cursor() as cursor:
            cursor.execute(sql, [*params, pk])
            found = cursor.fetchall()
        if not found:
            return None
        rows = compiler.results_iter(results=[found], tuple_expected=True)
        (user,) = model_instances(compiler, alias, rows)
        return user if self.user_can_authenticate(user) else None


_users = threading.local()
_NO_USER = 0  # stands for the user's key while the query is put together


def _user_query(alias: str) -> tuple[Any, str, list[Any]]:
    """The compiler, SQL and parameters (but the key's, which comes last) of
    ``User.objects.annotate(**role_rank_annotation()).filter(pk=…)``, as ``get`` would run
    it, put together once per thread and database."""
    from claimsdb.services.permissions import role_rank_annotation

    queries = _users.__dict__.setdefault("queries", {})
    if alias not in queries:
        model = get_user_model()
        queryset = model._default_manager.using(alias).annotate(**role_rank_annotation())
        compiler = queryset.filter(pk=_NO_USER).query.get_compiler(alias)
        sql, params = compiler.as_sql()
        if not params or params[-1] != _NO_USER:  # pragma: no cover - Django's order
            raise AssertionError("the user's key is not the query's last parameter")
        queries[alias] = (compiler, sql, list(params[:-1]))
    return queries[alias]


@receiver(user_login_failed)
def _count_failure(sender, credentials, request=None, **kwargs) -> None:
    username = credentials.get("username") or credentials.get(get_user_model().USERNAME_FIELD)
    if request is None or username is None or getattr(request, "signin_lockout", None):
        return  # a refused attempt while locked does not lengthen the lockout
    record_failure(str(username), client_address(request))
