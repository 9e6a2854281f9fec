"""The OpenAPI description of the review queue (``api/review_views.py``): the waiting
records and a record's review comments (docs/review.md)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
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
                response=OpenApiTypes.OBJECT,
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
            200: OpenApiResponse(response=OpenApiTypes.OBJECT, description="`{results: [...]}`"),
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
        request={"application/json": OpenApiTypes.OBJECT},
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
            201: OpenApiResponse(
                response=OpenApiTypes.OBJECT, description="`{results: [the comments]}`"
            ),
            **openapi.error_responses(*openapi.WRITE_ERRORS, 412),
        },
    ),
)
