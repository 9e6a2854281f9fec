"""Form input parked in the session while the analyst creates a record the form needs.

The claim form's "Create a new source…" button posts the claim form here instead of saving
it: its fields are kept in the session under a random token and the analyst goes to the
new-source page with ``?return=<token>``. Once the source is saved, the claim form opens
again (``?resume=<token>``) with everything that was typed, the new source chosen. A stash
is used once and then removed; stashes older than ``STASH_SECONDS`` are dropped, and a
session holds at most ``STASH_LIMIT`` of them (the oldest go first). Nothing here writes a
record: the stash lives only in the session.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from django.http import HttpRequest, QueryDict

SESSION_KEY = "form_stashes"
STASH_SECONDS = 2 * 60 * 60
STASH_LIMIT = 5
IGNORED_FIELDS = {"csrfmiddlewaretoken"}


def _live(request: HttpRequest) -> dict[str, dict[str, Any]]:
    now = time.time()
    stashes = request.session.get(SESSION_KEY, {})
    return {t: s for t, s in stashes.items() if now - s.get("at", 0) <= STASH_SECONDS}


def _store(request: HttpRequest, stashes: dict[str, dict[str, Any]]) -> None:
    if stashes:
        request.session[SESSION_KEY] = stashes
    else:
        request.session.pop(SESSION_KEY, None)


def put(request: HttpRequest, *, path: str, data: QueryDict, **extra: Any) -> str:
    """Park ``data`` (a form's POST) for the page at ``path``; returns the token."""
    stashes = _live(request)
    while len(stashes) >= STASH_LIMIT:
        stashes.pop(min(stashes, key=lambda t: stashes[t]["at"]))
    token = secrets.token_urlsafe(16)
    fields = {name: data.getlist(name) for name in data if name not in IGNORED_FIELDS}
    stashes[token] = {"at": time.time(), "path": path, "data": fields, **extra}
    _store(request, stashes)
    return token


def peek(request: HttpRequest, token: str | None) -> dict[str, Any] | None:
    """The stash for ``token`` if it is still there, left in place."""
    if not token:
        return None
    return _live(request).get(token)


def note(request: HttpRequest, token: str, **values: Any) -> None:
    """Add to a stash what happened meanwhile (the key of the record just created)."""
    stashes = _live(request)
    if token in stashes:
        stashes[token].update(values)
        _store(request, stashes)


def take(request: HttpRequest, token: str | None, *, path: str) -> dict[str, Any] | None:
    """The stash for ``token``, removed from the session; ``None`` if it is gone, has
    expired, or belongs to another page. Its ``data`` comes back as a mutable QueryDict."""
    stashes = _live(request)
    stash = stashes.pop(token, None) if token else None
    _store(request, stashes)
    if stash is None or stash.get("path") != path:
        return None
    data = QueryDict(mutable=True)
    for name, values in stash["data"].items():
        data.setlist(name, values)
    return {**stash, "data": data}


def resume_url(stash: dict[str, Any], token: str) -> str:
    """Where the analyst goes back to: the form the stash came from."""
    return f"{stash['path']}?resume={token}"
