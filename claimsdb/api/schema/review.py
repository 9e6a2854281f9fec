"""The OpenAPI description of the review queue (``api/review_views.py``): the waiting
records and a record's review comments (docs/review.md)."""

from __future__ import annotations

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)

from .. import openapi

KIND = OpenApiParameter(
    "kind", str, OpenApiParameter.PATH, description="the record kind: case, source, rule, method"
)
KEY = OpenApiParameter("key", str, OpenApiParameter.PATH, description="the record's key")
URI = {"type": "string", "format": "uri"}
NULLABLE_INT = {"type": "integer", "nullable": True}
STRINGS = {"type": "array", "items": {"type": "string"}}
REVIEW_QUEUE_ITEM = openapi.component(
    "ReviewQueueItem",
    {
        "type": "object",
        "description": "A record waiting for review",
        "properties": {
            "kind": {"type": "string"},
            "key": {"type": "string"},
            "approved_revision": {
                **NULLABLE_INT,
                "description": "its latest approved revision (null: none yet)",
            },
            "first_waiting_revision": NULLABLE_INT,
            "latest_revision": NULLABLE_INT,
            "revisions_waiting": {"type": "integer"},
            "waiting_since": {"type": "string", "format": "date-time", "nullable": True},
            "change": {"type": "string", "enum": ["material", "editorial"]},
            "authors": STRINGS,
            "case_status": {"type": "string", "nullable": True},
            "claim_origins": STRINGS,
            "open_comments": {"type": "integer"},
            "changes": {
                "type": "array",
                "description": "field by field since the approved revision (left out with "
                "`changes=0`)",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "op": {"type": "string", "enum": ["added", "removed", "changed"]},
                        "old": {},
                        "new": {},
                    },
                },
            },
            "review_url": URI,
        },
    },
)
REVIEW_QUEUE_PAGE = openapi.component(
    "ReviewQueuePage",
    {
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "next": {**URI, "nullable": True},
            "results": {"type": "array", "items": REVIEW_QUEUE_ITEM},
        },
    },
)
REVIEW_COMMENT = openapi.component(
    "ReviewComment",
    {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "kind": {"type": "string"},
            "key": {"type": "string"},
            "revision": {"type": "integer"},
            "path": {"type": "string"},
            "text": {"type": "string"},
            "author": {"type": "string"},
            "created_at": {"type": "string", "format": "date-time"},
            "addressed_in": NULLABLE_INT,
            "resolved_at": {"type": "string", "format": "date-time", "nullable": True},
        },
    },
)
REVIEW_COMMENTS_BODY = openapi.component(
    "ReviewComments",
    {
        "type": "object",
        "properties": {"results": {"type": "array", "items": REVIEW_COMMENT}},
    },
)
REQUEST_CHANGES = openapi.component(
    "RequestChanges",
    {
        "type": "object",
        "properties": {
            "revision": {
                "type": "integer",
                "minimum": 1,
                "maximum": 2**63 - 1,
                "description": "the record's latest revision",
            },
            "comments": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "maxLength": 500},
                        "text": {"type": "string"},
                    },
                    "required": ["text"],
                },
            },
        },
        "required": ["revision", "comments"],
    },
)
FILTERS = [
    OpenApiParameter("kind", str, description="only records of this kind"),
    OpenApiParameter("author", str, description="only records with a waiting change by this user"),
    OpenApiParameter("tag", str, description="only cases with this tag"),
    OpenApiParameter("status", str, description="only cases in this status"),
    OpenApiParameter("after", str, description="the cursor of a page's `next` link"),
    OpenApiParameter("page_size", int, description="records a page (25, at most 100)"),
    OpenApiParameter("changes", str, description="`0` leaves each record's diff out"),
]

REVIEW_QUEUE = extend_schema_view(
    get=extend_schema(
        operation_id="review_queue_list",
        summary="List the records waiting for review",
        description="Every record whose latest revision is not approved, the longest waiting "
        "first, with its authors, the revision range since its approved revision, whether "
        "any change is material, its claims' origins (cases) and the field-by-field diff "
        "since the approved revision. Keyset pages: follow `next`. Reviewers read the whole "
        "queue; analysts the records with a change of their own. Approve with the approvals "
        "endpoint; request changes with `POST …/comments/`.",
        tags=["review"],
        parameters=FILTERS,
        responses={
            200: OpenApiResponse(
                response=REVIEW_QUEUE_PAGE,
                description="`{count, next, results: [{kind, key, approved_revision, "
                "first_waiting_revision, latest_revision, revisions_waiting, waiting_since, "
                "change, authors, case_status, claim_origins, changes, review_url}]}`",
            ),
            **openapi.error_responses(*openapi.READ_ERRORS, examples=openapi.QUERY_ERRORS),
        },
    ),
)

REVIEW_COMMENTS = extend_schema_view(
    get=extend_schema(
        operation_id="review_comments_list",
        summary="List a record's open review comments",
        description="The comments no later revision addressed and no reviewer resolved, "
        "oldest first.",
        tags=["review"],
        parameters=[KIND, KEY],
        responses={
            200: OpenApiResponse(response=REVIEW_COMMENTS_BODY, description="the open comments"),
            **openapi.error_responses(*openapi.READ_ERRORS, examples=openapi.QUERY_ERRORS),
        },
    ),
    post=extend_schema(
        operation_id="review_request_changes",
        summary="Request changes to a record",
        description="Reviewers: comments anchored to paths of the record at `revision` "
        "(`claims[CLM-CP22-004-C].statement`, `limits`, or empty for the whole record). "
        "`revision` must be the record's latest: otherwise 412 `revision.stale` and nothing "
        "is written. The comments go to the authors of the waiting revisions (their feed, "
        "and e-mail when configured).",
        tags=["review"],
        parameters=[KIND, KEY],
        request={"application/json": REQUEST_CHANGES},
        examples=[
            OpenApiExample(
                "request changes",
                value={
                    "revision": 42,
                    "comments": [
                        {"path": "claims[CLM-CP22-003-A].statement", "text": "Cite the PR."}
                    ],
                },
                request_only=True,
            )
        ],
        responses={
            201: OpenApiResponse(response=REVIEW_COMMENTS_BODY, description="the comments written"),
            **openapi.error_responses(*openapi.WRITE_ERRORS, 412),
        },
    ),
)
