"""The OpenAPI description of approvals (``api/approval_views.py``, docs/review.md). The
bodies are components of ``api/openapi.py`` (``Approval``, ``ApprovalRequest``,
``ApprovalReview``)."""

from __future__ import annotations

from collections.abc import Callable

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)

from claimsdb.records.kinds import record_kinds

from .. import openapi


def record_approvals(kind: str) -> Callable:
    plural = record_kinds.get(kind).plural
    return extend_schema_view(
        get=extend_schema(
            operation_id=f"{plural}_approvals_retrieve",
            summary=f"What awaits review on a {kind}",
            description="The revisions since the record's latest approved revision, their "
            "authors, whether any is material, the field-by-field diff from the approved "
            "document to the latest, and the record's approvals (newest first). Anyone may "
            "read it: without a role, only the approvals of released revisions, and `review` "
            "and `awaiting_review` are null.",
            tags=["approvals"],
            auth=openapi.PUBLIC_READ,
            parameters=[openapi.key_parameter(kind)],
            responses={
                200: openapi.ref("ApprovalReview"),
                **openapi.error_responses(
                    *openapi.PUBLIC_READ_ERRORS, examples=openapi.QUERY_ERRORS
                ),
            },
        ),
        post=extend_schema(
            operation_id=f"{plural}_approvals_create",
            summary=f"Approve a {kind} at a revision",
            description="Approve the record's latest revision (reviewers), covering every "
            "revision since its previous approved one. Refused, with nothing written: 412 "
            "`approval.stale` when `revision` is not the latest; 403 `approval.own_change` "
            "when four eyes is on and a revision in the range is the reviewer's own, or "
            "`permission.denied` below the reviewer role; 409 `approval.already_approved`.",
            tags=["approvals"],
            parameters=[openapi.key_parameter(kind)],
            request={"application/json": openapi.ref("ApprovalRequest")},
            examples=[
                OpenApiExample(
                    "approve", value={"revision": 42, "note": "Checked"}, request_only=True
                )
            ],
            responses={
                201: OpenApiResponse(response=openapi.ref("Approval"), description="written"),
                **openapi.error_responses(*openapi.WRITE_ERRORS, 409, 412),
            },
        ),
    )


APPROVAL_LIST = extend_schema_view(
    get=extend_schema(
        operation_id="approvals_list",
        summary="List approvals",
        description="Every approval, oldest first, in keyset pages (follow `next`, or pass "
        "`since` with the last approval number you hold): what a mirror follows beside the "
        "revision feed. Approvals form a hash chain of their own (docs/review.md). Anyone "
        "may read it: users with a role see every approval, everyone else those of released "
        "revisions.",
        tags=["approvals"],
        auth=openapi.PUBLIC_READ,
        responses={
            200: openapi.ref("Approval"),
            **openapi.error_responses(*openapi.PUBLIC_READ_ERRORS, examples=openapi.QUERY_ERRORS),
        },
    ),
)
