"""The OpenAPI description of records and their claims (``api/views.py``): the list and
detail endpoints of each record kind, a case's claims and one claim."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)

from claimsdb.records.kinds import record_kinds

from .. import openapi

CASE_DIMENSIONS = OpenApiParameter(
    "dimensions",
    {"type": "object", "additionalProperties": {"type": "string"}},
    OpenApiParameter.QUERY,
    style="form",
    explode=True,
    description="assessment values, one parameter per dimension of any method "
    "(`evidence_grade=B`, `setting=research_demonstration`): cases whose current "
    "(newest) assessment has them all, or any assessment with `assessment=any`",
)


def record_list(kind: str) -> Any:
    """The description of a kind's list endpoint: ``GET`` a page, ``POST`` a new record."""
    entry = record_kinds.get(kind)
    component, plural = entry.component, entry.plural
    document = openapi.document_ref(kind)
    return extend_schema_view(
        get=extend_schema(
            operation_id=f"{plural}_list",
            summary=f"List {plural}",
            description=f"A page of {plural} (50 by default, `page_size` up to 200), each with "
            "the revision you see and its canonical document, and the total `count`; "
            "`ordering` always ends with the key, so pages keep one order. "
            f"{openapi.PUBLIC_LIST_NOTE}",
            tags=[plural],
            auth=openapi.PUBLIC_READ,
            parameters=[
                *([CASE_DIMENSIONS] if kind == "case" else []),
                openapi.IF_NONE_MATCH,
                *openapi.LIST_HEADERS,
            ],
            responses={
                200: openapi.ref(f"{component}ListItem"),
                304: openapi.LIST_NOT_MODIFIED,
                **openapi.error_responses(
                    *openapi.PUBLIC_READ_ERRORS, examples=openapi.LIST_ERRORS
                ),
            },
        ),
        post=extend_schema(
            operation_id=f"{plural}_create",
            summary=f"Create a {kind}",
            description=f"Create a {kind} from a `{entry.format}` document "
            f"({entry.write_role}s). One revision is written.",
            tags=[plural],
            parameters=openapi.WRITE_PARAMETERS + [openapi.ETAG_HEADER, openapi.LOCATION_HEADER],
            request={"application/json": document},
            examples=openapi.document_examples(kind, request=True),
            responses={
                201: OpenApiResponse(
                    response=document,
                    description="created",
                    examples=openapi.document_examples(kind, codes=("201",)),
                ),
                **openapi.error_responses(*openapi.WRITE_ERRORS, 409, family=kind),
            },
        ),
    )


def record_list_csv(kind: str) -> Any:
    """The description of a kind's list as CSV: the list's filters, every record they
    select, one table."""
    entry = record_kinds.get(kind)
    plural = entry.plural
    return extend_schema_view(
        get=extend_schema(
            operation_id=f"{plural}_list_csv",
            summary=f"List {plural} as CSV",
            description=f"Every {kind} the list's filters select (not a page), as the "
            f"`{plural}.csv` table of docs/exports.md (its data dictionary), by key, streamed. "
            "UTF-8, `\\n` line endings, a header row; text cells that a spreadsheet would run "
            "as a formula begin with an apostrophe. Anyone may read it: users with a role "
            "(viewer and above) get the working state, drafts included, with each record's "
            "latest revision; everyone else the released records (withdrawn ones only with "
            "`status=withdrawn`), as the list shows them.",
            tags=[plural],
            auth=openapi.PUBLIC_READ,
            parameters=[CASE_DIMENSIONS] if kind == "case" else [],
            responses={
                (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="the table"),
                **openapi.error_responses(
                    *openapi.PUBLIC_READ_ERRORS, examples=openapi.QUERY_ERRORS
                ),
            },
        ),
    )


def record_detail(kind: str) -> Any:
    """The description of a kind's detail endpoint: read, replace, patch, withdraw."""
    entry = record_kinds.get(kind)
    component, plural = entry.component, entry.plural
    document = openapi.document_ref(kind)
    key = openapi.key_parameter(kind)
    write_role = entry.write_role
    written = {
        200: OpenApiResponse(response=document, description="the document as it now is"),
    }
    return extend_schema_view(
        get=extend_schema(
            operation_id=f"{plural}_retrieve",
            summary=f"Read a {kind}",
            description=f"The {kind}'s canonical document; its ETag is the revision you see. "
            f"{openapi.PUBLIC_RECORD_NOTE}",
            tags=[plural],
            auth=openapi.PUBLIC_READ,
            parameters=[key, openapi.IF_NONE_MATCH, openapi.ETAG_HEADER],
            responses={
                200: OpenApiResponse(response=document, examples=openapi.document_examples(kind)),
                304: openapi.NOT_MODIFIED,
                **openapi.error_responses(
                    *openapi.PUBLIC_READ_ERRORS, family=kind, examples=openapi.QUERY_ERRORS
                ),
            },
        ),
        put=extend_schema(
            operation_id=f"{plural}_update",
            summary=f"Replace a {kind}",
            description=f"Replace the {kind} with a whole document ({write_role}s). Requires "
            "If-Match. A document equal to the current one makes no revision and keeps the "
            "ETag.",
            tags=[plural],
            parameters=[
                key,
                openapi.if_match(True),
                *openapi.WRITE_PARAMETERS,
                openapi.ETAG_HEADER,
            ],
            request={"application/json": document},
            examples=openapi.document_examples(kind, request=True),
            responses={
                **written,
                **openapi.error_responses(*openapi.WRITE_ERRORS, 412, 428, family=kind),
            },
        ),
        patch=extend_schema(
            operation_id=f"{plural}_partial_update",
            summary=f"Patch a {kind}",
            description=f"Apply an RFC 7386 JSON merge patch to the {kind}'s document "
            f"({write_role}s). If-Match is honoured when sent; without it the patch applies to "
            "the latest revision.",
            tags=[plural],
            parameters=[
                key,
                openapi.if_match(False),
                *openapi.WRITE_PARAMETERS,
                openapi.ETAG_HEADER,
            ],
            request={
                "application/merge-patch+json": openapi.ref(f"{component}Patch"),
                "application/json": openapi.ref(f"{component}Patch"),
            },
            responses={
                **written,
                **openapi.error_responses(*openapi.WRITE_ERRORS, 412, family=kind),
            },
        ),
        delete=extend_schema(
            operation_id=f"{plural}_destroy",
            summary=f"Withdraw a {kind}",
            description=f"Withdraw the {kind} ({write_role}s): its status becomes `withdrawn`; "
            "nothing is ever erased. If-Match is honoured when sent.",
            tags=[plural],
            parameters=[
                key,
                openapi.if_match(False),
                *openapi.WRITE_PARAMETERS,
                openapi.ETAG_HEADER,
            ],
            request=None,
            responses={
                **written,
                **openapi.error_responses(
                    400, 401, 403, 404, 412, family=kind, examples={400: "withdraw.400"}
                ),
            },
        ),
    )


# --- claims -------------------------------------------------------------------------------

CLAIM = openapi.ref("Claim")
CASE_KEY = openapi.key_parameter("case")
CLAIM_ID = OpenApiParameter(
    "claim_id", str, OpenApiParameter.PATH, description="the claim's permanent ID"
)

CASE_CLAIMS = extend_schema_view(
    get=extend_schema(
        operation_id="cases_claims_list",
        summary="List a case's claims",
        description="The claims of a case, in the analyst's order. The ETag is the case's. "
        "Without a role: the claims of the case's released document.",
        tags=["claims"],
        auth=openapi.PUBLIC_READ,
        parameters=[CASE_KEY, openapi.IF_NONE_MATCH, openapi.ETAG_HEADER],
        responses={
            200: {"type": "array", "items": CLAIM},
            304: openapi.NOT_MODIFIED,
            **openapi.error_responses(
                *openapi.PUBLIC_READ_ERRORS, family="case", examples=openapi.QUERY_ERRORS
            ),
        },
    ),
    post=extend_schema(
        operation_id="cases_claims_create",
        summary="Add a claim to a case",
        description="Add a claim (analysts), last or at `position`: one revision of the case. "
        "Violations' paths point into the claim sent. If-Match (the case's ETag) is "
        "honoured when sent.",
        tags=["claims"],
        parameters=[
            CASE_KEY,
            openapi.if_match(False),
            *openapi.WRITE_PARAMETERS,
            OpenApiParameter(
                "position",
                int,
                OpenApiParameter.QUERY,
                description="where to insert the claim (0 = first; default: last)",
            ),
            openapi.ETAG_HEADER,
            openapi.LOCATION_HEADER,
        ],
        request={"application/json": CLAIM},
        examples=[
            OpenApiExample(
                "a new claim",
                value={**(openapi.claim_example() or {}), "id": "CLM-CP22-003-D"},
                request_only=True,
            )
        ],
        responses={
            201: OpenApiResponse(response=CLAIM, description="the claim as stored"),
            **openapi.error_responses(
                *openapi.WRITE_ERRORS,
                412,
                family="claim",
                examples={404: "case.404", 412: "case.412"},
            ),
        },
    ),
)


CLAIM_DETAIL = extend_schema_view(
    get=extend_schema(
        operation_id="claims_retrieve",
        summary="Read a claim",
        description="The claim as its case's document holds it; the ETag is the revision of "
        'the case you see and a `Link: <…/cases/KEY/>; rel="up"` header names the case. '
        "Without a role: the claim as the case's released document holds it (404 for a "
        "claim that document does not have).",
        tags=["claims"],
        auth=openapi.PUBLIC_READ,
        parameters=[CLAIM_ID, openapi.IF_NONE_MATCH, openapi.ETAG_HEADER],
        responses={
            200: OpenApiResponse(response=CLAIM),
            304: openapi.NOT_MODIFIED,
            **openapi.error_responses(
                *openapi.PUBLIC_READ_ERRORS, family="claim", examples=openapi.QUERY_ERRORS
            ),
        },
    ),
    put=extend_schema(
        operation_id="claims_update",
        summary="Replace a claim",
        description="Replace the claim (analysts); its ID never changes. Requires If-Match "
        "(the case's ETag). One revision of the case.",
        tags=["claims"],
        parameters=[
            CLAIM_ID,
            openapi.if_match(True),
            *openapi.WRITE_PARAMETERS,
            openapi.ETAG_HEADER,
        ],
        request={"application/json": CLAIM},
        responses={
            200: OpenApiResponse(response=CLAIM, description="the claim as stored"),
            **openapi.error_responses(
                *openapi.WRITE_ERRORS, 412, 428, family="claim", examples={412: "case.412"}
            ),
        },
    ),
    patch=extend_schema(
        operation_id="claims_partial_update",
        summary="Patch a claim",
        description="Apply an RFC 7386 JSON merge patch to the claim (analysts). If-Match "
        "(the case's ETag) is honoured when sent.",
        tags=["claims"],
        parameters=[
            CLAIM_ID,
            openapi.if_match(False),
            *openapi.WRITE_PARAMETERS,
            openapi.ETAG_HEADER,
        ],
        request={
            "application/merge-patch+json": openapi.ref("ClaimPatch"),
            "application/json": openapi.ref("ClaimPatch"),
        },
        responses={
            200: OpenApiResponse(response=CLAIM, description="the claim as stored"),
            **openapi.error_responses(
                *openapi.WRITE_ERRORS, 412, family="claim", examples={412: "case.412"}
            ),
        },
    ),
    delete=extend_schema(
        operation_id="claims_destroy",
        summary="Withdraw a claim",
        description="Withdraw the claim (analysts): it stays in its case with status "
        "`withdrawn`, and its ID is never reused. If-Match is honoured when sent.",
        tags=["claims"],
        parameters=[
            CLAIM_ID,
            openapi.if_match(False),
            *openapi.WRITE_PARAMETERS,
            openapi.ETAG_HEADER,
        ],
        request=None,
        responses={
            200: OpenApiResponse(response=CLAIM, description="the withdrawn claim"),
            **openapi.error_responses(
                400,
                401,
                403,
                404,
                412,
                family="claim",
                examples={400: "withdraw.400", 412: "case.412"},
            ),
        },
    ),
)
