"""The DRF plug-ins the settings name (``REST_FRAMEWORK``): parsers, renderer, pagination.

This module imports nothing else of the API, so that DRF can load it while its own views
module is still being imported.
"""

from __future__ import annotations

import json
from typing import Any

from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class DocumentJSONParser(JSONParser):
    """Strict JSON (no NaN/Infinity); a malformed body is a 400 ``document.malformed``."""

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"the body is not UTF-8 text: {exc}", "document.malformed") from exc
        try:
            return json.loads(text, parse_constant=_refuse_constant)
        except json.JSONDecodeError as exc:
            what = "the body is empty" if not text.strip() else exc.msg
            raise ParseError(
                f"not valid JSON: {what} (line {exc.lineno}, column {exc.colno})",
                "document.malformed",
            ) from exc
        except (ValueError, RecursionError) as exc:
            raise ParseError(f"not valid JSON: {exc}", "document.malformed") from exc


class MergePatchParser(DocumentJSONParser):
    """``application/merge-patch+json`` bodies (RFC 7386) for PATCH."""

    media_type = "application/merge-patch+json"


class CanonicalJSONRenderer(JSONRenderer):
    """JSON with sorted keys, as record-format.md serializes documents."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        renderer_context = renderer_context or {}
        indent = self.get_indent(accepted_media_type, renderer_context)
        text = json.dumps(
            data,
            cls=self.encoder_class,
            indent=indent,
            ensure_ascii=False,
            allow_nan=False,
            sort_keys=True,
            separators=(",", ":") if indent is None else (",", ": "),
        )
        return text.encode("utf-8")


class Pagination(PageNumberPagination):
    """Pages of 50 (``?page_size=`` up to 200), with the total ``count``."""

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
                code="invalid",
            )
        return super().get_page_size(request)
