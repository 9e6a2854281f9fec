"""The access policy (``claimsdb.access``) for the web pages: requests in, pages or errors out.

Signed-in users with a role (viewer and up) read the **working state**; everyone else —
anonymous visitors and signed-in users without a role — reads **released** revisions only
(docs/releases.md). A record or revision the request may not see is a 404, never a sign-in
prompt: the answer is the same whether it exists unreleased or not at all. Editing pages
send anonymous users to sign in and refuse users without the role (403).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse

from claimsdb import access
from claimsdb.access import VisibleDocument, VisibleRevision


class SignInRequired(Exception):
    """Nothing here is visible without signing in."""


def request_has_role(request: HttpRequest, role: str) -> bool:
    return access.holds_role(request.user, role)


def reads_released(request: HttpRequest) -> bool:
    """Whether this request reads the released record (not the working state)."""
    return not access.may_read_working_state(request.user)


def document_or_404(request: HttpRequest, kind: str, key: str) -> VisibleDocument:
    """The document of ``kind``/``key`` that this request sees (``access.visible_document``):
    the live one, or the released snapshot. Http404 when there is none."""
    visible = access.visible_document(request.user, kind, key)
    if visible is None:
        raise Http404(f"no visible {kind} {key}")
    return visible


def require_visible_record(request: HttpRequest, kind: str, key: str) -> None:
    """For a record's history and diff pages: Http404 unless the request sees some revision
    of it (any, in the working state; a released one otherwise)."""
    if access.visible_revision_number(request.user, kind, key) is None:
        raise Http404(f"no visible {kind} {key}")


def revision_or_404(request: HttpRequest, kind: str, key: str, number: int) -> VisibleRevision:
    """Revision ``number`` of a record, if this request may see it
    (``access.visible_revision``). Http404 otherwise, or when ``number`` is not a revision
    of this record."""
    visible = access.visible_revision(request.user, kind, key, number)
    if visible is None:
        raise Http404(f"no visible revision {number} of {kind} {key}")
    return visible


def require_working_state(request: HttpRequest) -> None:
    """For pages that show the working state only (imports): anonymous visitors sign in,
    users without a role are refused."""
    if access.may_read_working_state(request.user):
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
