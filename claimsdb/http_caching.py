"""HTTP caching of released revisions: their pages never change, so they are cached for ever.

A revision's page shows that revision only; once a release has published it, nothing about
it changes again (releases are never rewritten). Its responses carry ``ETag: "<n>"`` and
``Cache-Control: public, max-age=31536000, immutable`` for the public (docs/releases.md).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from django.utils.cache import patch_vary_headers

from claimsdb.public import is_released_revision

IMMUTABLE = "max-age=31536000, immutable"


def revision_etag(revision_number: int) -> str:
    return f'"{revision_number}"'


def immutable_headers(
    response: HttpResponse, revision_number: int, *, request: HttpRequest | None = None
) -> bool:
    """Mark the response to a released revision's page as cacheable for ever.

    Sets ``Cache-Control: public, max-age=31536000, immutable``, ``ETag: "<n>"`` and
    ``Vary: Cookie`` when the revision is released, and returns True; does nothing (and
    returns False) otherwise.

    Pass ``request`` for HTML pages: a signed-in user's copy carries per-user content (the
    header, a CSRF token in a revert form that would go stale after the next sign-in), so
    it is left uncached and only anonymous copies are marked.
    """
    if request is not None and request.user.is_authenticated:
        return False
    if is_released_revision(revision_number) is None:
        return False
    response["Cache-Control"] = f"public, {IMMUTABLE}"
    response["ETag"] = revision_etag(revision_number)
    patch_vary_headers(response, ["Cookie"])
    return True


def released_not_modified(request: HttpRequest, revision_number: int) -> HttpResponse | None:
    """A 304 for ``If-None-Match: "<n>"`` on a released revision's page, else None
    (never for signed-in users: see ``immutable_headers``)."""
    header = request.headers.get("If-None-Match", "")
    tags = {tag.strip().removeprefix("W/") for tag in header.split(",")}
    etag = revision_etag(revision_number)
    if etag not in tags and "*" not in tags:
        return None
    response = HttpResponseNotModified()
    return response if immutable_headers(response, revision_number, request=request) else None
