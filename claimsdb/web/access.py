"""Who may read and change what, for the web pages.

The one place deciding which state of the knowledge base a request reads (docs/releases.md):
signed-in users with a role (viewer and up) read the **working state**; everyone else —
anonymous visitors and signed-in users without a role — reads **released** revisions only,
through ``claimsdb.public``. A record or revision the request may not see is a 404, never a
sign-in prompt: the answer is the same whether it exists unreleased or not at all. Editing
pages send anonymous users to sign in and refuse users without the role (403).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse

from claimsdb import public
from claimsdb.models import Release, Revision
from claimsdb.records import record_document
from claimsdb.selectors.revisions import latest_revision_number, record_revision
from claimsdb.services.permissions import RANK, loaded_role

WORKING = "working"  # the live state: signed-in readers with a role
RELEASED = "released"  # released revisions only: everyone else


class SignInRequired(Exception):
    """Nothing here is visible without signing in."""


def request_role(request: HttpRequest) -> str | None:
    """The user's highest role, once per request (read with the signed-in user)."""
    if not hasattr(request, "_claimsdb_role"):
        request._claimsdb_role = loaded_role(request.user)
    return request._claimsdb_role


def request_has_role(request: HttpRequest, role: str) -> bool:
    held = request_role(request)
    return held is not None and RANK[held] >= RANK[role]


def reading_mode(request: HttpRequest) -> str:
    """Which state of the knowledge base this request reads: the rule of
    ``public.may_read_working_state``, with the role looked up once per request."""
    return WORKING if request_has_role(request, "viewer") else RELEASED


def reads_released(request: HttpRequest) -> bool:
    return reading_mode(request) == RELEASED


@dataclass(frozen=True)
class VisibleRecord:
    document: dict[str, Any]
    revision: int | None  # the revision this document is (the latest, for the working state)
    mode: str

    @property
    def released(self) -> bool:
        return self.mode == RELEASED


def visible_document(request: HttpRequest, kind: str, key: str) -> VisibleRecord:
    """The document of ``kind``/``key`` that this request sees: the live one, or the released
    snapshot (``public.released_revision``). Http404 when there is none."""
    mode = reading_mode(request)
    if mode == WORKING:
        document = record_document(kind, key)
        if document is None:
            raise Http404(f"no {kind} {key}")
        return VisibleRecord(document, latest_revision_number(kind, key), mode)
    revision = public.released_revision(kind, key)
    if revision is None:
        raise Http404(f"no released {kind} {key}")
    return VisibleRecord(json.loads(revision.snapshot), revision.number, mode)


def require_visible_record(request: HttpRequest, kind: str, key: str) -> None:
    """For a record's history and diff pages: Http404 unless the request sees some revision
    of it (any, in the working state; a released one otherwise)."""
    if reading_mode(request) == WORKING:
        found = latest_revision_number(kind, key) is not None
    else:
        found = public.released_entry(kind, key) is not None
    if not found:
        raise Http404(f"no visible {kind} {key}")


@dataclass(frozen=True)
class VisibleRevision:
    revision: Revision
    release: Release | None  # the first release publishing it; always set when released
    mode: str

    @property
    def released(self) -> bool:
        return self.mode == RELEASED


def visible_revision(request: HttpRequest, kind: str, key: str, number: int) -> VisibleRevision:
    """Revision ``number`` of a record, if this request may see it: any revision in the
    working state, only one a release published (``public.release_of_revision``) otherwise.
    Http404 when it may not, or when ``number`` is not a revision of this record."""
    mode = reading_mode(request)
    release = public.release_of_revision(kind, key, number)
    if mode == RELEASED and release is None:
        raise Http404(f"revision {number} of {kind} {key} was never released")
    revision = record_revision(kind, key, number)
    if revision is None:
        raise Http404(f"revision {number} is not a revision of {kind} {key}")
    return VisibleRevision(revision, release, mode)


def require_working_state(request: HttpRequest) -> None:
    """For pages that show the working state only (imports): anonymous visitors sign in,
    users without a role are refused."""
    if reading_mode(request) == WORKING:
        return
    if not request.user.is_authenticated:
        raise SignInRequired
    raise PermissionDenied("this page needs the viewer role")


def reader_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A page that may send anonymous visitors to sign in (``SignInRequired``)."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except SignInRequired:
            return redirect_to_login(request.get_full_path())

    return wrapper


def role_required(role: str) -> Callable:
    """An editing page: anonymous users sign in first; users without ``role`` get 403.

    The services check the role again inside the writing transaction.
    """

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not request_has_role(request, role):
                raise PermissionDenied(f"this page needs the {role} role")
            return view(request, *args, **kwargs)

        return wrapper

    return decorate
