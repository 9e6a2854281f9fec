"""Conventions shared by every API view (and the importer's): write parameters, ETags,
preconditions, JSON parsing and rendering, pagination.

* Every write takes ``?summary=…`` (required; the services refuse an empty one with
  ``revision.summary_required``) and ``?material=true|false`` (default true):
  ``write_params(request)``.
* A record's ``ETag`` is its latest revision number, quoted: ``etag(14) == '"14"'``.
* Parsers, renderer and pagination are in ``rest`` (named by the settings).
* ``If-None-Match`` on reads gives 304 (``not_modified``); ``If-Match`` on writes is turned
  into the services' ``expected_revision`` (``expected_revision(request, …)``). A write
  without it names no revision, and the services apply it to the record as it is without
  losing a concurrent change (``services/records.py``).
"""

from __future__ import annotations

import re
from typing import Any

from rest_framework import serializers
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response

from claimsdb.codes import RecordCode, RequestCode, RevisionCode
from claimsdb.records import RuleViolation, StaleRevision
from claimsdb.selectors.revisions import latest_revision_number
from claimsdb.services import ANY_REVISION

from .errors import RequestViolations, precondition_required

# Re-exported: views here and in the importer's and releases' modules take them from common.
from .rest import (  # noqa: F401
    CanonicalJSONRenderer,
    DocumentJSONParser,
    MergePatchParser,
    Pagination,
    RevisionFeedPagination,
    StableOrderingFilter,
)

TRUE_VALUES = {"true", "1", "yes", "on"}
FALSE_VALUES = {"false", "0", "no", "off"}
MAX_INT = 2**63 - 1
# One entity tag of an If-Match / If-None-Match list: "14", W/"14"
ENTITY_TAG = re.compile(r'\s*(W/)?"([^"]*)"\s*(?:,|$)')


# --- write parameters -------------------------------------------------------------------


def write_params(request: Request) -> dict[str, Any]:
    """``summary`` and ``material`` of the revision a write makes, from the query string."""
    raw = request.query_params.get("material")
    if raw is None or raw == "":
        material = True
    elif raw.strip().lower() in TRUE_VALUES:
        material = True
    elif raw.strip().lower() in FALSE_VALUES:
        material = False
    else:
        raise RequestViolations(
            [
                RuleViolation(
                    RevisionCode.MATERIAL_INVALID,
                    f"material must be true or false, not {raw!r}",
                    "material",
                )
            ]
        )
    return {"summary": request.query_params.get("summary", ""), "material": material}


def int_param(value: Any, name: str, *, minimum: int = 0) -> int:
    """A non-negative integer query parameter, or a 400 naming it."""
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        number = None
    if number is None or not minimum <= number <= MAX_INT:
        raise RequestViolations(
            [RuleViolation(RequestCode.INVALID, f"{name} must be an integer ≥ {minimum}", name)]
        )
    return number


class RefuseNul:
    """View mixin: refuse NUL characters in the path (404) and the query string (400).

    No database compares or stores them alike (PostgreSQL refuses them in text), so they
    must never reach a query or a service. Checked after authentication and permissions.
    """

    def initial(self, request: Request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        if any("\x00" in str(value) for value in kwargs.values()):
            raise RequestViolations(
                [RuleViolation(RecordCode.NOT_FOUND, "there is no such record", "")], 404
            )
        for name, values in request.query_params.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                raise RequestViolations(
                    [RuleViolation(RequestCode.INVALID, "must not contain NUL characters", name)]
                )


# --- ETags and preconditions ------------------------------------------------------------


def etag(revision: int | None) -> str | None:
    return None if revision is None else f'"{revision}"'


def etag_headers(revision: int | None) -> dict[str, str]:
    value = etag(revision)
    return {"ETag": value} if value else {}


def parse_entity_tags(header: str) -> list[tuple[bool, str]] | None:
    """``[(weak, opaque tag), …]`` of an If-Match/If-None-Match header; ``None`` if malformed.

    ``*`` gives ``[(False, "*")]``.
    """
    header = header.strip()
    if header == "*":
        return [(False, "*")]
    tags = []
    position = 0
    while position < len(header):
        match = ENTITY_TAG.match(header, position)
        if match is None:
            return None
        tags.append((bool(match.group(1)), match.group(2)))
        position = match.end()
    return tags or None


def not_modified(request: Request, revision: int | None) -> Response | None:
    """A 304 when ``If-None-Match`` names the current revision (weak comparison)."""
    header = request.headers.get("If-None-Match")
    if header is None or revision is None:
        return None
    tags = parse_entity_tags(header) or []
    if any(tag == "*" or tag == str(revision) for _, tag in tags):
        return Response(status=304, headers=etag_headers(revision))
    return None


def expected_revision(request: Request, kind: str, key: str, *, required: bool = False) -> Any:
    """The services' ``expected_revision`` for this request's ``If-Match``.

    ``ANY_REVISION`` when there is no header (and none is ``required``: 428 otherwise) or for
    ``If-Match: *``; else the record's latest revision if the header names it (strong
    comparison: a weak tag never matches), or a 412 ``revision.stale``.
    """
    header = request.headers.get("If-Match")
    if header is None:
        if required:
            raise precondition_required()
        return ANY_REVISION
    tags = parse_entity_tags(header)
    if tags is None:
        raise RequestViolations(
            [
                RuleViolation(
                    RevisionCode.PRECONDITION_INVALID,
                    f'If-Match must be * or quoted revision numbers such as "14", not {header!r}',
                    "If-Match",
                )
            ]
        )
    if tags == [(False, "*")]:
        return ANY_REVISION
    named = {tag for weak, tag in tags if not weak and tag.isdigit()}
    numbers = sorted(int(tag) for tag in named if len(tag) < 20)
    current = latest_revision_number(kind, key)
    if current is None:  # no such record: the service answers 404
        return numbers[-1] if numbers else ANY_REVISION
    if str(current) in named:
        return current
    label = f"{kind} {key}"
    stale = StaleRevision(record=label, expected=numbers[-1] if numbers else None, current=current)
    if not numbers:
        stale.violations = [
            RuleViolation(
                RevisionCode.STALE,
                f"If-Match {header} names no revision of {label} (a weak tag never matches); "
                f'its latest revision is {current}: send If-Match: "{current}" after reloading '
                "it",
                "",
            )
        ]
    raise stale


# --- documents --------------------------------------------------------------------------


class NoFormSerializer(serializers.Serializer):
    """The API reads and writes documents, not forms: the browsable API shows a raw body."""


class ErrorsAsJSON(BaseContentNegotiation):
    """Downloads (a release's STIX or CSV, a list as CSV) answer in their own type whatever
    the client accepts; their errors are JSON (the one renderer of these views), never a
    406."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None
