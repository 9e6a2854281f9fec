"""The OpenAPI description of the revision ledger (``api/revision_views.py``): the log, one
revision, a case's history, diffs and reverts. The bodies are components of
``api/openapi.py`` (``Revision``, ``RevisionDetail``, ``Diff``, ``RevertRequest``)."""

from __future__ import annotations

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)

from .. import openapi

REVISION_LIST = extend_schema_view(
    get=extend_schema(
        operation_id="revisions_list",
        summary="List revisions",
        description="The global revision log, in ascending order (`ordering=-number` for "
        "newest first), without snapshots, in keyset pages: follow `next` (a `cursor`). In "
        "ascending order `next` is never null: at the head it returns an empty page, and the "
        "new revisions once some are written, so a tool polls it for ever. To start after a "
        "number you hold, pass `since`. Anyone may read it: users with a role see every "
        "revision, everyone else only the revisions a release points at. See "
        "docs/pagination.md.",
        tags=["revisions"],
        auth=openapi.PUBLIC_READ,
        parameters=[openapi.IF_NONE_MATCH, *openapi.LIST_HEADERS],
        responses={
            200: openapi.ref("Revision"),
            304: openapi.LIST_NOT_MODIFIED,
            **openapi.error_responses(
                *openapi.PUBLIC_READ_ERRORS,
                examples={**openapi.QUERY_ERRORS, 400: "feed.400", 404: "revision.404"},
            ),
        },
    ),
)


CASE_REVISIONS = extend_schema_view(
    get=extend_schema(
        operation_id="cases_revisions_list",
        summary="List a case's revisions",
        description="The case's history, in ascending order (`ordering=-number` for newest "
        "first), without snapshots (read one with `/revisions/<n>/`), in keyset pages as "
        "`/revisions/` (follow `next`). Without a role: the revisions of the case a release "
        "points at (404 for a case never released).",
        tags=["revisions"],
        auth=openapi.PUBLIC_READ,
        parameters=[openapi.key_parameter("case"), openapi.IF_NONE_MATCH, *openapi.LIST_HEADERS],
        responses={
            200: openapi.ref("Revision"),
            304: openapi.LIST_NOT_MODIFIED,
            **openapi.error_responses(
                *openapi.PUBLIC_READ_ERRORS,
                family="case",
                examples={**openapi.QUERY_ERRORS, 400: "feed.400"},
            ),
        },
    ),
)


REVISION_DETAIL = extend_schema_view(
    get=extend_schema(
        operation_id="revisions_retrieve",
        summary="Read a revision",
        description="A revision's metadata and the record's document as it was after it. A "
        "revision never changes: its ETag is its number, and a released one (a release "
        "points at it) may be cached for ever. Anyone may read a released revision; users "
        "with a role read any.",
        tags=["revisions"],
        auth=openapi.PUBLIC_READ,
        parameters=[
            OpenApiParameter(
                "number", int, OpenApiParameter.PATH, description="the revision number"
            ),
            openapi.IF_NONE_MATCH,
            openapi.REVISION_ETAG_HEADER,
            openapi.CACHE_CONTROL_HEADER,
        ],
        responses={
            200: openapi.ref("RevisionDetail"),
            304: openapi.NOT_MODIFIED,
            **openapi.error_responses(
                *openapi.PUBLIC_READ_ERRORS, family="revision", examples=openapi.QUERY_ERRORS
            ),
        },
    ),
)


CASE_DIFF = extend_schema_view(
    get=extend_schema(
        operation_id="cases_diff",
        summary="Diff two revisions of a case",
        description="Every changed field from revision `from` to revision `to` (default: the "
        "revision you see); claims are matched by ID. Both must be revisions of this case "
        "(`revision.not_of_record` otherwise). Without a role: released revisions only "
        "(`to` defaults to the released one; any other is `revision.not_of_record`).",
        tags=["revisions"],
        auth=openapi.PUBLIC_READ,
        parameters=[
            openapi.key_parameter("case"),
            OpenApiParameter("from", int, OpenApiParameter.QUERY, required=True),
            OpenApiParameter(
                "to", int, OpenApiParameter.QUERY, description="default: the latest revision"
            ),
        ],
        responses={
            200: openapi.ref("Diff"),
            **openapi.error_responses(
                *openapi.PUBLIC_READ_ERRORS,
                family="case",
                examples={**openapi.QUERY_ERRORS, 400: "diff.400"},
            ),
        },
    ),
)


CASE_REVERT = extend_schema_view(
    post=extend_schema(
        operation_id="cases_revert",
        summary="Revert a case to a revision",
        description="Restore the case as it was at one of its revisions (reviewers): a new "
        "`revert` revision, through the same rules as any write. Imported reproduction runs "
        "are kept. If-Match (the case's ETag) is honoured when sent.",
        tags=["revisions"],
        parameters=[
            openapi.key_parameter("case"),
            openapi.if_match(False),
            *openapi.WRITE_PARAMETERS,
            openapi.ETAG_HEADER,
        ],
        request={"application/json": openapi.ref("RevertRequest")},
        examples=[OpenApiExample("revert", value={"revision": 3}, request_only=True)],
        responses={
            200: OpenApiResponse(
                response=openapi.document_ref("case"), description="the case as it now is"
            ),
            **openapi.error_responses(
                *openapi.WRITE_ERRORS, 412, family="case", examples={400: "revert.400"}
            ),
        },
    ),
)
