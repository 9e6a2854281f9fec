"""Drafts: an editing form's input kept on the server for its user.

The claim form's "Create a new source…" button posts the claim form here instead of saving
it: its fields are kept as a draft under a random token and the analyst goes to the
new-source page with ``?return=<token>``. Once the source is saved, the claim form opens
again (``?resume=<token>``) with everything that was typed, the new source chosen.

A draft lives in the database (``FormDraft``), not in the session: it outlasts a sign-out
and a reopened browser, and opening it again — a reload, the back button, the link a day
later — shows it again. It goes when the form is saved or the analyst discards it; until
then every later post of the form (another row, a refusal) updates it. A user keeps at most
``DRAFT_LIMIT`` drafts (the oldest go first), none older than ``DRAFT_SECONDS``. Nothing
here writes a record: a draft is input, not a revision.
"""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any

from django.http import HttpRequest, QueryDict
from django.utils import timezone

from claimsdb.models import FormDraft

DRAFT_SECONDS = 14 * 24 * 60 * 60
DRAFT_LIMIT = 20
DRAFTS_LISTED = 5  # drafts of one form offered on its empty page
IGNORED_FIELDS = {"csrfmiddlewaretoken", "draft"}
TOKEN = "draft"  # the hidden field that carries a draft's token in its form


def _now() -> dt.datetime:
    return timezone.now()


def _live(request: HttpRequest):
    cutoff = _now() - dt.timedelta(seconds=DRAFT_SECONDS)
    return FormDraft.objects.filter(user_id=request.user.pk, updated_at__gte=cutoff)


def _fields(data: QueryDict) -> dict[str, list[str]]:
    return {name: data.getlist(name) for name in data if name not in IGNORED_FIELDS}


def put(request: HttpRequest, *, path: str, data: QueryDict, **extra: Any) -> str:
    """Keep ``data`` (a form's POST) as a draft for the page at ``path``; returns the token.
    A form that already is a draft (its ``draft`` field) keeps its token."""
    now = _now()
    token = data.get(TOKEN, "")
    if token and keep(request, token, data, **extra):
        return token
    mine = FormDraft.objects.filter(user_id=request.user.pk)
    mine.filter(updated_at__lt=now - dt.timedelta(seconds=DRAFT_SECONDS)).delete()
    kept = list(mine.order_by("-updated_at", "-pk").values_list("pk", flat=True)[: DRAFT_LIMIT - 1])
    mine.exclude(pk__in=kept).delete()
    token = secrets.token_urlsafe(16)
    FormDraft.objects.create(
        user_id=request.user.pk,
        token=token,
        path=path,
        data=_fields(data),
        extra=extra,
        created_at=now,
        updated_at=now,
    )
    return token


def keep(request: HttpRequest, token: str, data: QueryDict, **extra: Any) -> bool:
    """Replace a draft's input with ``data`` (the form as last posted); False if gone."""
    draft = _live(request).filter(token=token).first()
    if draft is None:
        return False
    draft.data = _fields(data)
    draft.extra = {**draft.extra, **extra}
    draft.updated_at = _now()
    draft.save(update_fields=["data", "extra", "updated_at"])
    return True


def peek(request: HttpRequest, token: str | None) -> dict[str, Any] | None:
    """The draft for ``token`` if it is still kept: its ``path``, ``data`` and extras."""
    if not token or not request.user.is_authenticated:
        return None
    draft = _live(request).filter(token=token).first()
    if draft is None:
        return None
    return {**draft.extra, "path": draft.path, "data": draft.data}


def note(request: HttpRequest, token: str, **values: Any) -> None:
    """Add to a draft what happened meanwhile (the key of the record just created)."""
    draft = _live(request).filter(token=token).first()
    if draft is not None:
        draft.extra = {**draft.extra, **values}
        draft.save(update_fields=["extra"])


def reopen(request: HttpRequest, token: str | None, *, path: str) -> dict[str, Any] | None:
    """The draft for ``token``, left in place; ``None`` if it is gone, has expired, or
    belongs to another page. Its ``data`` comes back as a mutable QueryDict."""
    draft = peek(request, token)
    if draft is None or draft["path"] != path:
        return None
    data = QueryDict(mutable=True)
    for name, values in draft["data"].items():
        data.setlist(name, values)
    data[TOKEN] = token
    return {**draft, "data": data}


def discard(request: HttpRequest, token: str | None) -> None:
    """Forget a draft (its form was saved, or the analyst let it go)."""
    if token:
        FormDraft.objects.filter(user_id=request.user.pk, token=token).delete()


def drafts_of(request: HttpRequest, path: str) -> list[dict[str, Any]]:
    """The user's drafts of the form at ``path``, newest first (a few): offered on its
    empty page, so that a form left by the back button is one link away."""
    rows = _live(request).filter(path=path).order_by("-updated_at", "-pk")[:DRAFTS_LISTED]
    return [{"token": d.token, "updated_at": d.updated_at} for d in rows]


def resume_url(draft: dict[str, Any], token: str) -> str:
    """Where the analyst goes back to: the form the draft came from."""
    return f"{draft['path']}?resume={token}"
