"""The DRF plug-ins the settings name (``REST_FRAMEWORK``): parsers, renderer, pagination.

This module imports nothing else of the API, so that DRF can load it while its own views
module is still being imported.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet
from django.http import QueryDict
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.filters import OrderingFilter
from rest_framework.pagination import BasePagination, PageNumberPagination
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from claimsdb.codes import DocumentCode, PaginationCode, RequestCode
from claimsdb.records import jsontext
from claimsdb.records.canonical import unmark, with_literals
from claimsdb.records.errors import RuleViolations


class DocumentJSONParser(JSONParser):
    """Strict JSON (``records/jsontext.py``): no NaN/Infinity, no repeated key, no NUL or
    lone surrogate in a string. A malformed body is a 400 ``document.malformed``; the other
    problems are listed with their JSON paths."""

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        try:
            return jsontext.loads(raw)
        except RuleViolations as refused:
            first = refused.violations[0]
            if first.code == DocumentCode.MALFORMED:
                message = first.message.replace("the document is empty", "the body is empty")
                raise ParseError(message, DocumentCode.MALFORMED) from refused
            raise


class MergePatchParser(DocumentJSONParser):
    """``application/merge-patch+json`` bodies (RFC 7386) for PATCH."""

    media_type = "application/merge-patch+json"


class CanonicalJSONRenderer(JSONRenderer):
    """JSON with sorted keys, as docs/record-format.md serializes documents."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        renderer_context = renderer_context or {}
        indent = self.get_indent(accepted_media_type, renderer_context)
        text = json.dumps(
            with_literals(data),
            cls=self.encoder_class,
            indent=indent,
            ensure_ascii=False,
            allow_nan=False,
            sort_keys=True,
            separators=(",", ":") if indent is None else (",", ": "),
        )
        return unmark(text).encode("utf-8")


# --- what every page carries -------------------------------------------------------------


def link_header(links: dict[str, str | None]) -> str:
    """An RFC 8288 ``Link`` header of the links that exist: ``<url>; rel="next", …``."""
    return ", ".join(f'<{url}>; rel="{rel}"' for rel, url in links.items() if url)


def page_etag(body: dict[str, Any]) -> str:
    """A weak entity tag of a page's body: the same page, the same tag, whatever renders it
    (a list moves under its reader, so no revision number names a page)."""
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, default=str)
    return f'W/"{hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]}"'


def page_response(request: Request, body: dict[str, Any], links: dict[str, str | None]) -> Response:
    """A page of a list: its body, its ``Link`` header beside the body's links, and its
    ``ETag`` (a 304 when ``If-None-Match`` names it, compared weakly)."""
    etag = page_etag(body)
    headers = {"ETag": etag}
    link = link_header(links)
    if link:
        headers["Link"] = link
    sent = request.headers.get("If-None-Match", "")
    held = {tag.strip().removeprefix("W/") for tag in sent.split(",")}
    if "*" in held or etag.removeprefix("W/") in held:
        return Response(status=304, headers=headers)
    return Response(body, headers=headers)


def page_schema(results: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """A page's schema, as the named component ``<Item>Page`` (items ``CaseListItem`` give
    ``CasePage``): one class of a generated client per list, not one per operation."""
    from .openapi import component  # at schema time: openapi imports the API's views

    item = results.get("items", {}) if isinstance(results, dict) else {}
    name = item.get("$ref", "").rsplit("/", 1)[-1].removesuffix("ListItem")
    if not name:  # drf-spectacular asking where a page puts its results
        return body
    return component(f"{name}Page", body)


LINK = {"type": "string", "format": "uri", "nullable": True}


class Pagination(PageNumberPagination):
    """Pages of 50 (``?page_size=`` up to 200), with the total ``count``.

    The list must be in a stable order (``StableOrderingFilter``); a page number past the
    end is a 404 ``request.not_found``. The response carries a ``Link`` header (``first``,
    ``prev``, ``next``, ``last``) beside the body's ``next`` and ``previous``, and an
    ``ETag``.
    """

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request):
        # DRF falls back to the default on a malformed page_size; refuse it instead, so that
        # the schema's "an integer of at least 1" is what the endpoint takes.
        raw = request.query_params.get(self.page_size_query_param)
        if raw is not None and not (raw.isascii() and raw.isdigit() and int(raw) >= 1):
            raise ValidationError(
                {self.page_size_query_param: [f"must be an integer ≥ 1, not {raw!r}"]},
                code=RequestCode.INVALID,
            )
        return super().get_page_size(request)

    def get_page_number(self, request, paginator):
        # DRF reads an empty ?page= as page 1; refuse anything but a whole number ≥ 1, as
        # the schema's integer says (a number past the end stays a 404)
        raw = request.query_params.get(self.page_query_param)
        if raw is not None and not (raw.isascii() and raw.isdigit() and int(raw) >= 1):
            raise ValidationError(
                {self.page_query_param: [f"must be an integer ≥ 1, not {raw!r}"]},
                code=RequestCode.INVALID,
            )
        return super().get_page_number(request, paginator)

    def get_first_link(self) -> str:
        return remove_query_param(self.request.build_absolute_uri(), self.page_query_param)

    def get_last_link(self) -> str:
        last = self.page.paginator.num_pages
        if last == 1:
            return self.get_first_link()
        return replace_query_param(self.request.build_absolute_uri(), self.page_query_param, last)

    def links(self) -> dict[str, str | None]:
        return {
            "first": self.get_first_link(),
            "prev": self.get_previous_link(),
            "next": self.get_next_link(),
            "last": self.get_last_link(),
        }

    def get_paginated_response(self, data: list[Any]) -> Response:
        body = {
            "count": self.page.paginator.count,
            "next": self.get_next_link(),
            "previous": self.get_previous_link(),
            "results": data,
        }
        return page_response(self.request, body, self.links())

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return page_schema(
            schema,
            {
                "type": "object",
                "required": ["count", "next", "previous", "results"],
                "properties": {
                    "count": {"type": "integer", "description": "all the items of the list"},
                    "next": {**LINK, "description": "the next page (null on the last)"},
                    "previous": {**LINK, "description": "the previous page (null on the first)"},
                    "results": schema,
                },
            },
        )


class StableOrderingFilter(OrderingFilter):
    """``?ordering=``, always ended by the view's unique field (``ordering_unique``, by
    default ``key``), so that rows equal on the ordering keep one order from page to page."""

    def get_ordering(self, request, queryset, view):
        ordering = super().get_ordering(request, queryset, view)
        unique = getattr(view, "ordering_unique", "key")
        if ordering and unique not in {term.lstrip("-") for term in ordering}:
            ordering = [*ordering, unique]
        return ordering


# --- the revision feed: keyset pages ------------------------------------------------------

CURSOR_TEXT = re.compile(r"([np]):([0-9]{1,19})")
MAX_NUMBER = 2**63 - 1
CURSOR_INVALID = PaginationCode.CURSOR_INVALID


@dataclass(frozen=True)
class Cursor:
    """A place in the feed: the page after revision ``number`` (``n``) or the page before it
    (``p``), in the feed's order. Sent as an opaque token; only its links make one."""

    direction: str
    number: int

    def token(self) -> str:
        text = f"{self.direction}:{self.number}".encode()
        return base64.urlsafe_b64encode(text).decode().rstrip("=")

    @classmethod
    def parse(cls, token: str) -> Cursor:
        try:
            padded = token + "=" * (-len(token) % 4)
            text = base64.b64decode(padded, altchars=b"-_", validate=True).decode("ascii")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            text = ""
        match = CURSOR_TEXT.fullmatch(text)
        cursor = cls(match.group(1), int(match.group(2))) if match else None
        # only the tokens the links hand out: one spelling of each place
        if cursor is None or cursor.number > MAX_NUMBER or cursor.token() != token:
            raise ValidationError(
                {
                    "cursor": "not a cursor of this feed: follow the `next` and `previous` "
                    "links of a response (or start without a cursor)"
                },
                code=CURSOR_INVALID,
            )
        return cursor


def _clamp(number: int) -> int:
    return min(max(number, 0), MAX_NUMBER)


class RevisionFeedPagination(BasePagination):
    """Keyset pages of revisions by number (docs/pagination.md): ``?cursor=`` comes from a
    response's ``next`` or ``previous`` link; ``?page_size=`` (50, up to 200).

    Ascending (the default order), ``next`` is never null: at the head of the ledger it
    points at the same place, and returns the revisions written since once there are some,
    so a tool follows ``next`` for ever. Descending (``ordering=-number``), ``next`` is null
    after revision 1. Every page costs the same queries, wherever it is in the ledger: a
    count, and one indexed range read.
    """

    page_size = 50
    max_page_size = 200
    page_size_query_param = "page_size"
    cursor_query_param = "cursor"

    def paginate_queryset(self, queryset: QuerySet, request, view=None) -> list[Any]:
        self.request = request
        filterset_class = getattr(view, "filterset_class", None)
        self.kept_parameters = {
            self.page_size_query_param,
            "ordering",
            "format",
            *(filterset_class.base_filters if filterset_class else ()),
        }
        raw = request.query_params.get(self.cursor_query_param)
        self.cursor = None if raw in (None, "") else Cursor.parse(raw)
        self.descending = any(term == "-number" for term in queryset.query.order_by)
        size = self.get_page_size(request)
        count = getattr(view, "feed_count", None)
        self.count = count(queryset) if count else queryset.count()
        later, earlier = ("number__gt", "number__lt")
        if self.descending:
            later, earlier = earlier, later
        if self.cursor is None or self.cursor.direction == "n":
            if self.cursor is not None:
                queryset = queryset.filter(**{later: self.cursor.number})
            rows = list(queryset.order_by("-number" if self.descending else "number")[: size + 1])
            self.more = len(rows) > size
            self.page = rows[:size]
        else:
            queryset = queryset.filter(**{earlier: self.cursor.number})
            rows = list(queryset.order_by("number" if self.descending else "-number")[: size + 1])
            self.more = len(rows) > size
            self.page = list(reversed(rows[:size]))
        return self.page

    def get_page_size(self, request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not (raw.isascii() and raw.isdigit() and int(raw) >= 1):
            # as the numbered pages do: a malformed size is refused, never read as the default
            raise ValidationError(
                {self.page_size_query_param: [f"must be an integer ≥ 1, not {raw!r}"]},
                code=RequestCode.INVALID,
            )
        return min(int(raw), self.max_page_size)

    def _link(self, cursor: Cursor | None, start: bool = False) -> str | None:
        """The URL of the page at ``cursor`` (or of the feed's start), with the request's
        filters, ordering and page size (other query parameters are left out)."""
        if cursor is None and not start:
            return None
        query = QueryDict(mutable=True)
        for name, values in self.request.query_params.lists():
            if name in self.kept_parameters:
                query.setlist(name, values)
        if cursor is not None:
            query[self.cursor_query_param] = cursor.token()
        text = query.urlencode()
        return self.request.build_absolute_uri(self.request.path + (f"?{text}" if text else ""))

    def get_next_link(self) -> str | None:
        return self._link(self.next_cursor())

    def get_previous_link(self) -> str | None:
        return self._link(self.previous_cursor())

    def next_cursor(self) -> Cursor | None:
        cursor, step = self.cursor, -1 if self.descending else 1
        if self.page:
            if self.descending and not self.more and (cursor is None or cursor.direction == "n"):
                return None  # past revision 1: nothing can ever come after
            return Cursor("n", self.page[-1].number)
        if self.descending and (cursor is None or cursor.direction == "n"):
            return None
        if cursor is None:
            return Cursor("n", 0)
        if cursor.direction == "n":
            return cursor  # the head: poll here again
        # nothing before a "p" place: the page from that place on
        return Cursor("n", _clamp(cursor.number - step))

    def previous_cursor(self) -> Cursor | None:
        cursor, step = self.cursor, -1 if self.descending else 1
        if cursor is None:
            return None
        if cursor.direction == "p" and not self.more:
            return None
        if self.page:
            return Cursor("p", self.page[0].number)
        return Cursor("p", _clamp(cursor.number + step))

    def get_paginated_response(self, data: list[Any]) -> Response:
        next_cursor, previous_cursor = self.next_cursor(), self.previous_cursor()
        body = {
            "count": self.count,
            "next": self._link(next_cursor),
            "previous": self._link(previous_cursor),
            "next_cursor": next_cursor.token() if next_cursor else None,
            "previous_cursor": previous_cursor.token() if previous_cursor else None,
            "results": data,
        }
        links = {
            "first": self._link(None, start=True),
            "prev": body["previous"],
            "next": body["next"],
        }
        return page_response(self.request, body, links)

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        token = {"type": "string", "nullable": True}
        return page_schema(
            schema,
            {
                "type": "object",
                "required": [
                    "count",
                    "next",
                    "previous",
                    "next_cursor",
                    "previous_cursor",
                    "results",
                ],
                "properties": {
                    "count": {
                        "type": "integer",
                        "description": "how many revisions match the filters, on every page",
                    },
                    "next": {
                        **LINK,
                        "description": "the page after this one; in ascending order never "
                        "null: at the head it returns the revisions written since (or none "
                        "yet)",
                    },
                    "previous": {**LINK, "description": "the page before this one"},
                    "next_cursor": {
                        **token,
                        "description": "the `cursor` of `next`, to send as `?cursor=` "
                        "(null when `next` is)",
                    },
                    "previous_cursor": {
                        **token,
                        "description": "the `cursor` of `previous` (null when it is)",
                    },
                    "results": schema,
                },
            },
        )

    def get_schema_operation_parameters(self, view) -> list[dict[str, Any]]:
        return [
            {
                "name": self.cursor_query_param,
                "required": False,
                "in": "query",
                "description": "an opaque place in the feed, taken from a response's `next` "
                "or `previous` link (`pagination.cursor_invalid` otherwise)",
                "schema": {"type": "string"},
            },
            {
                "name": self.page_size_query_param,
                "required": False,
                "in": "query",
                "description": f"revisions per page ({self.page_size} by default, at most "
                f"{self.max_page_size})",
                "schema": {"type": "integer"},
            },
        ]
