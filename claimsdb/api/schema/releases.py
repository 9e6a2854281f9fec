"""The OpenAPI description of releases (``api/releases.py``): the bodies the views build
(a release, its entries, its bundle), the publish request, and each operation."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)

from claimsdb.models import ReleaseChange
from claimsdb.records.kinds import record_kinds

from .. import openapi

RELEASE = openapi.component(
    "Release",
    {
        "type": "object",
        "description": "A release: what it published, when, and its counts by change.",
        "properties": {
            "number": {"type": "integer", "example": 1},
            "published_at": {"type": "string", "format": "date-time"},
            "notes": {"type": "string"},
            "last_revision": {
                "type": "integer",
                "description": "the ledger's latest revision when the release was published",
            },
            "counts": openapi.component(
                "ReleaseCounts",
                {
                    "type": "object",
                    "properties": {change: {"type": "integer"} for change in ReleaseChange.values},
                    "required": list(ReleaseChange.values),
                },
            ),
            "url": {"type": "string", "format": "uri"},
            "page": {"type": "string", "format": "uri"},
            "bundle": {"type": "string", "format": "uri"},
            "stix": {
                "type": "string",
                "format": "uri",
                "description": "the release as a STIX 2.1 bundle",
            },
            "csv": {
                "type": "string",
                "format": "uri",
                "description": "the release as a zip of CSV tables",
            },
        },
        "required": [
            "number",
            "published_at",
            "notes",
            "last_revision",
            "counts",
            "url",
            "page",
            "bundle",
            "stix",
            "csv",
        ],
    },
)
ENTRY = openapi.component(
    "ReleaseEntry",
    {
        "type": "object",
        "description": "A record as a release publishes it.",
        "properties": {
            "kind": {"type": "string", "enum": record_kinds.names()},
            "key": {"type": "string"},
            "change": {"type": "string", "enum": list(ReleaseChange.values)},
            "revision": {"type": "integer", "description": "the revision the public sees"},
            "previous_revision": {
                "type": "integer",
                "nullable": True,
                "description": "the revision the previous release published, if any",
            },
            "page": {"type": "string", "format": "uri"},
        },
        "required": ["kind", "key", "change", "revision", "previous_revision", "page"],
    },
)
PAGE_LINK = {"type": "string", "format": "uri", "nullable": True}
RELEASE_DETAIL = openapi.component(
    "ReleaseDetail",
    {
        "description": "A release and one page of its entries.",
        "allOf": [
            RELEASE,
            {
                "type": "object",
                "properties": {
                    "entries": {
                        "type": "array",
                        "items": ENTRY,
                        "description": "one page of the entries (`page`, `page_size`), by kind "
                        "and key",
                    },
                    "entries_count": {"type": "integer", "description": "all the entries"},
                    "entries_next": {**PAGE_LINK, "description": "the next page of entries"},
                    "entries_previous": {**PAGE_LINK, "description": "the previous page"},
                },
                "required": ["entries", "entries_count", "entries_next", "entries_previous"],
            },
        ],
    },
)
BUNDLE = openapi.component(
    "Bundle",
    {
        "type": "object",
        "description": "A `claimsdb.bundle/1`: records of every kind (docs/record-format.md).",
        "properties": {
            "format": {"type": "string", "enum": ["claimsdb.bundle/1"]},
            **{
                kind.plural: {"type": "array", "items": openapi.document_ref(kind.name)}
                for kind in record_kinds.in_write_order()
            },
        },
        "required": ["format"],
    },
)
RELEASE_PAGE = openapi.component(
    "ReleasePage",
    {
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "next": PAGE_LINK,
            "previous": PAGE_LINK,
            "results": {"type": "array", "items": RELEASE},
        },
        "required": ["count", "next", "previous", "results"],
    },
)


PUBLISH_REQUEST = openapi.component(
    "PublishRequest",
    {
        "type": "object",
        "description": "The body of `POST /api/v1/releases/` (the view reads it itself).",
        "properties": {
            "notes": {
                "type": "string",
                "minLength": 1,
                "description": "what the release publishes and why",
            }
        },
        "required": ["notes"],
        "additionalProperties": False,
    },
)


NUMBER_PARAMETER = OpenApiParameter(
    "number", OpenApiTypes.INT, OpenApiParameter.PATH, description="the release number"
)


RELEASE_LIST = extend_schema_view(
    get=extend_schema(
        operation_id="releases_list",
        summary="List releases",
        description="Every release, newest first, with its counts by change. Public.",
        tags=["releases"],
        auth=openapi.PUBLIC_READ,
        parameters=[
            OpenApiParameter("page", OpenApiTypes.INT, OpenApiParameter.QUERY),
            OpenApiParameter("page_size", OpenApiTypes.INT, OpenApiParameter.QUERY),
            openapi.IF_NONE_MATCH,
            *openapi.LIST_HEADERS,
        ],
        responses={
            200: OpenApiResponse(RELEASE_PAGE, examples=openapi.recorded_example("releases.200")),
            304: openapi.LIST_NOT_MODIFIED,
            **openapi.error_responses(
                400, 404, examples={**openapi.LIST_ERRORS, 404: "release.404"}
            ),
        },
    ),
    post=extend_schema(
        operation_id="releases_create",
        summary="Publish a release",
        description="Publishes the latest revision of every ready case and active source, "
        "rule and method (reviewers). Refused without notes (`release.notes_required`) or "
        "when nothing changed since the previous release (`release.nothing_changed`).",
        tags=["releases"],
        request={"application/json": PUBLISH_REQUEST},
        parameters=[openapi.location_header(201, what="the release")],
        responses={
            201: OpenApiResponse(
                RELEASE_DETAIL,
                description="the release published",
                examples=openapi.recorded_example("release.201"),
            ),
            **openapi.error_responses(400, 401, 403, family="release"),
        },
        examples=[
            OpenApiExample(
                "notes",
                value={"notes": "CP22-003 reviewed and ready."},
                request_only=True,
            )
        ],
    ),
)


RELEASE_DETAIL = extend_schema_view(
    get=extend_schema(
        operation_id="releases_retrieve",
        summary="Read a release",
        description="One release and a page of its entries (50 by default, by record kind "
        "and key; follow `entries_next`): every record the public sees in it, the revision "
        "it sees and how it changed against the previous release. Public.",
        tags=["releases"],
        auth=openapi.PUBLIC_READ,
        parameters=[
            NUMBER_PARAMETER,
            OpenApiParameter("page", OpenApiTypes.INT, OpenApiParameter.QUERY),
            OpenApiParameter("page_size", OpenApiTypes.INT, OpenApiParameter.QUERY),
            openapi.link_header(
                "RFC 8288 links to the `first`, `prev`, `next` and `last` pages of the "
                "entries, those that exist, beside `entries_next` and `entries_previous`"
            ),
        ],
        responses={200: RELEASE_DETAIL, **openapi.error_responses(404, family="release")},
    ),
)


RELEASE_BUNDLE = extend_schema_view(
    get=extend_schema(
        operation_id="releases_bundle",
        summary="Download a release",
        description="The release as one `claimsdb.bundle/1` built from its entries' "
        "snapshots (withdrawn records included), byte-identical to `manage.py "
        "export_records --release <n>`. A release never changes: cacheable for ever. Public.",
        tags=["releases"],
        auth=openapi.PUBLIC_READ,
        parameters=[NUMBER_PARAMETER],
        responses={200: BUNDLE, **openapi.error_responses(404, family="release")},
    ),
)


RELEASE_STIX = extend_schema_view(
    get=extend_schema(
        operation_id="releases_stix",
        summary="Download a release as STIX 2.1",
        description="The release as one STIX 2.1 bundle (`application/stix+json;version=2.1`): "
        "cases as `incident` and `report` objects, claims as `note`s with their evidence as "
        "external references carrying locators, sources as `report`s, relations as "
        "`relationship`s, scope rules as `note`s, and what STIX has no property for in the "
        "claimsdb extension (docs/exports.md). Deterministic identifiers and times: the same "
        "bytes as `manage.py export_records --release <n> --format stix`, cacheable for ever. "
        "Public.",
        tags=["releases"],
        auth=openapi.PUBLIC_READ,
        parameters=[NUMBER_PARAMETER],
        responses={
            (200, "application/stix+json"): OpenApiResponse(
                openapi.component(
                    "StixBundle",
                    {
                        "type": "object",
                        "properties": {
                            "type": {"type": "string", "enum": ["bundle"]},
                            "id": {"type": "string"},
                            "objects": {
                                "type": "array",
                                "items": {"type": "object", "additionalProperties": True},
                            },
                        },
                    },
                ),
                description="a STIX 2.1 bundle",
            ),
            **openapi.error_responses(404),
        },
    ),
)


RELEASE_CSV = extend_schema_view(
    get=extend_schema(
        operation_id="releases_csv",
        summary="Download a release as CSV tables",
        description="The release as a zip of CSV files, one per table (cases, claims, "
        "evidence, assessments, figures, relations, sources, rules, methods), UTF-8 with `\\n` "
        "line endings, rows in key order; the data dictionary is docs/exports.md. The same "
        "bytes as `manage.py export_records --release <n> --format csv`, cacheable for ever. "
        "Public.",
        tags=["releases"],
        auth=openapi.PUBLIC_READ,
        parameters=[NUMBER_PARAMETER],
        responses={
            (200, "application/zip"): OpenApiResponse(
                OpenApiTypes.BINARY, description="a zip of CSV files"
            ),
            **openapi.error_responses(404),
        },
    ),
)
