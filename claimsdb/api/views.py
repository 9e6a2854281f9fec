"""Records (cases, sources, rules, methods) and claims over REST.

Each view reads through ``visibility`` — the working state for users with a role, the
released record for everyone else — or translates its input into one service call and the
outcome into a response; the services' refusals become errors in
``errors.exception_handler``. Nothing here writes a model.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

from django.urls import reverse
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claimsdb.public import ReleasedRecords
from claimsdb.records import (
    RecordExists,
    RecordNotFound,
    RuleViolation,
    RuleViolations,
    StaleRevision,
)
from claimsdb.selectors.pages import page_keys, rows_in_order
from claimsdb.selectors.revisions import latest_revision_number
from claimsdb.services import (
    claim_add,
    claim_update,
    claim_withdraw,
    record_create,
    record_update,
    record_withdraw,
)
from claimsdb.services.writer import KIND_ROLE, WriteOutcome

from . import filters, openapi
from .common import (
    DocumentJSONParser,
    MergePatchParser,
    NoFormSerializer,
    Pagination,
    RefuseNul,
    StableOrderingFilter,
    etag_headers,
    guarded_write,
    int_param,
    merge_patch,
    not_modified,
    write_params,
)
from .permissions import ClaimPermission, RecordPermission
from .visibility import (
    MODELS,
    document_of,
    may_read_working_state,
    visible_claim,
    visible_document,
    visible_records,
    visible_revision,
    working_case,
    working_case_document,
)


def record_url(kind: str, key: str) -> str:
    return reverse(f"api:{kind}-detail", kwargs={"key": key})


def written(
    outcome: WriteOutcome, body: Any = None, status: int = 200, headers: dict | None = None
) -> Response:
    """The response to a write: the document (or ``body``) and the record's new ETag."""
    if outcome.revision is not None:
        revision = outcome.revision.number
    else:
        revision = latest_revision_number(outcome.kind, outcome.key)
    return Response(
        outcome.document if body is None else body,
        status=status,
        headers={**etag_headers(revision), **(headers or {})},
    )


# --- records ----------------------------------------------------------------------------


class RecordListView(RefuseNul, mixins.ListModelMixin, GenericAPIView):
    """``GET``: a page of records with their documents; ``POST``: create one."""

    kind = ""
    permission_classes = [RecordPermission]
    parser_classes = [DocumentJSONParser]
    serializer_class = NoFormSerializer
    filter_backends = [DjangoFilterBackend, StableOrderingFilter]
    pagination_class = Pagination
    ordering_fields = ["key", "revision"]
    ordering = ["key"]
    ordering_unique = "key"  # the last term of every ordering: pages keep one order

    def get_queryset(self):
        """The model, for the schema and the browsable API's filter form: ``get`` reads the
        records through ``visibility``."""
        return MODELS[self.kind].objects.none()

    def get(self, request: Request) -> Response:
        records = visible_records(request.user, self.kind)
        if isinstance(records, ReleasedRecords):  # the released record, filtered as such
            page = self.paginate_queryset(filters.filter_released(self, request, records))
        else:
            # cut the page on primary keys, then build only its rows' documents
            records = self.filter_queryset(records)
            keys = self.paginate_queryset(page_keys(records))
            page = rows_in_order(records, keys)
        items = [
            {"key": row.key, "revision": row.revision, "document": document_of(self.kind, row)}
            for row in page
        ]
        return self.get_paginated_response(items)

    def post(self, request: Request) -> Response:
        params = write_params(request)
        outcome = record_create(user=request.user, kind=self.kind, document=request.data, **params)
        location = request.build_absolute_uri(record_url(self.kind, outcome.key))
        return written(outcome, status=201, headers={"Location": location})


class RecordDetailView(RefuseNul, APIView):
    """One record: its canonical document, replaced, patched or withdrawn."""

    kind = ""
    permission_classes = [RecordPermission]
    parser_classes = [DocumentJSONParser, MergePatchParser]

    def get(self, request: Request, key: str) -> Response:
        if self.kind == "case" and may_read_working_state(request.user):
            # the case's row and its revision in one query, then its document
            case = working_case(key)
            if case is not None:
                cached = not_modified(request, case.revision)
                if cached is not None:
                    return cached
                visible = working_case_document(case)
                return Response(visible.document, headers=etag_headers(visible.revision))
        revision = visible_revision(request.user, self.kind, key)
        cached = not_modified(request, revision)
        if cached is not None:
            return cached
        visible = visible_document(request.user, self.kind, key, revision)
        if visible is None:
            raise RecordNotFound(self.kind, key)
        return Response(visible.document, headers=etag_headers(visible.revision))

    def put(self, request: Request, key: str) -> Response:
        params = write_params(request)
        document = request.data

        def write(expected):
            return record_update(
                user=request.user,
                kind=self.kind,
                key=key,
                document=document,
                expected_revision=expected,
                **params,
            )

        return written(guarded_write(request, self.kind, key, write, required=True))

    def patch(self, request: Request, key: str) -> Response:
        params = write_params(request)
        patch = request.data

        def write(expected):
            current = visible_document(request.user, self.kind, key)
            if current is None:
                raise RecordNotFound(self.kind, key)
            return record_update(
                user=request.user,
                kind=self.kind,
                key=key,
                document=merge_patch(current.document, patch),
                expected_revision=expected,
                **params,
            )

        return written(guarded_write(request, self.kind, key, write))

    def delete(self, request: Request, key: str) -> Response:
        params = write_params(request)

        def write(expected):
            return record_withdraw(
                user=request.user, kind=self.kind, key=key, expected_revision=expected, **params
            )

        return written(guarded_write(request, self.kind, key, write))


def _record_views(kind: str, filterset_class, ordering_fields: list[str]):
    """The list and detail views of one record kind, with their OpenAPI description."""
    component = openapi.KIND_COMPONENTS[kind]
    plural = f"{kind}s"
    document = openapi.document_ref(kind)
    key = openapi.key_parameter(kind)
    write_role = KIND_ROLE[kind]
    list_extra = []
    if kind == "case":
        list_extra.append(
            OpenApiParameter(
                "dimensions",
                {"type": "object", "additionalProperties": {"type": "string"}},
                OpenApiParameter.QUERY,
                style="form",
                explode=True,
                description="assessment values, one parameter per dimension of any method "
                "(`evidence_grade=B`, `setting=research_demonstration`): cases whose current "
                "(newest) assessment has them all, or any assessment with `assessment=any`",
            )
        )

    list_schema: dict[str, Any] = {}
    detail_schema: dict[str, Any] = {}
    list_view = type(
        f"{component}ListView",
        (RecordListView,),
        {
            "kind": kind,
            "filterset_class": filterset_class,
            "ordering_fields": ordering_fields,
            "__doc__": f"List and create {plural}.",
        },
    )
    list_schema["get"] = extend_schema(
        operation_id=f"{plural}_list",
        summary=f"List {plural}",
        description=f"A page of {plural} (50 by default, `page_size` up to 200), each with "
        "the revision you see and its canonical document, and the total `count`; `ordering` "
        "always ends with the key, so pages keep one order. "
        f"{openapi.PUBLIC_LIST_NOTE}",
        tags=[plural],
        auth=openapi.PUBLIC_READ,
        parameters=list_extra,
        responses={
            200: openapi.ref(f"{component}ListItem"),
            **openapi.error_responses(*openapi.PUBLIC_READ_ERRORS, query=True),
        },
    )
    list_schema["post"] = extend_schema(
        operation_id=f"{plural}_create",
        summary=f"Create a {kind}",
        description=f"Create a {kind} from a `{openapi.KIND_FORMATS[kind]}` document "
        f"({write_role}s). One revision is written.",
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
            **openapi.error_responses(*openapi.WRITE_ERRORS, 409),
        },
    )

    detail_view = type(
        f"{component}DetailView",
        (RecordDetailView,),
        {"kind": kind, "__doc__": f"Read, replace, patch and withdraw one {kind}."},
    )
    detail_schema["get"] = extend_schema(
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
            **openapi.error_responses(*openapi.PUBLIC_READ_ERRORS, query=True),
        },
    )
    write_responses = {
        200: OpenApiResponse(response=document, description="the document as it now is"),
    }
    detail_schema["put"] = extend_schema(
        operation_id=f"{plural}_update",
        summary=f"Replace a {kind}",
        description=f"Replace the {kind} with a whole document ({write_role}s). Requires "
        "If-Match. A document equal to the current one makes no revision and keeps the ETag.",
        tags=[plural],
        parameters=[key, openapi.if_match(True), *openapi.WRITE_PARAMETERS, openapi.ETAG_HEADER],
        request={"application/json": document},
        examples=openapi.document_examples(kind, request=True),
        responses={
            **write_responses,
            **openapi.error_responses(*openapi.WRITE_ERRORS, 412, 428),
        },
    )
    detail_schema["patch"] = extend_schema(
        operation_id=f"{plural}_partial_update",
        summary=f"Patch a {kind}",
        description=f"Apply an RFC 7386 JSON merge patch to the {kind}'s document "
        f"({write_role}s). If-Match is honoured when sent; without it the patch applies to "
        "the latest revision.",
        tags=[plural],
        parameters=[key, openapi.if_match(False), *openapi.WRITE_PARAMETERS, openapi.ETAG_HEADER],
        request={
            "application/merge-patch+json": openapi.ref(f"{component}Patch"),
            "application/json": openapi.ref(f"{component}Patch"),
        },
        responses={**write_responses, **openapi.error_responses(*openapi.WRITE_ERRORS, 412)},
    )
    detail_schema["delete"] = extend_schema(
        operation_id=f"{plural}_destroy",
        summary=f"Withdraw a {kind}",
        description=f"Withdraw the {kind} ({write_role}s): its status becomes `withdrawn`; "
        "nothing is ever erased. If-Match is honoured when sent.",
        tags=[plural],
        parameters=[key, openapi.if_match(False), *openapi.WRITE_PARAMETERS, openapi.ETAG_HEADER],
        request=None,
        responses={
            **write_responses,
            **openapi.error_responses(400, 401, 403, 404, 412),
        },
    )
    return extend_schema_view(**list_schema)(list_view), extend_schema_view(**detail_schema)(
        detail_view
    )


CaseListView, CaseDetailView = _record_views(
    "case", filters.CaseFilter, ["key", "title", "status", "revision"]
)
SourceListView, SourceDetailView = _record_views(
    "source", filters.SourceFilter, ["key", "title", "kind", "revision"]
)
RuleListView, RuleDetailView = _record_views("rule", filters.RuleFilter, ["key", "revision"])
MethodListView, MethodDetailView = _record_views(
    "method", filters.MethodFilter, ["key", "revision"]
)


# --- claims -----------------------------------------------------------------------------


@contextmanager
def claim_paths(case_key: str, index: int):
    """Make the paths of violations point into the claim sent rather than into its case.

    ``claims[3].evidence`` becomes ``evidence`` when claim 3 is the one written; a problem
    elsewhere in the case keeps its path and names the case as its ``record``.
    """
    try:
        yield
    except (StaleRevision, RecordExists):
        raise
    except RuleViolations as refused:
        prefix = f"claims[{index}]"
        rebased = []
        for violation in refused.violations:
            path = violation.path
            if violation.record:
                rebased.append(violation)
            elif path == prefix:
                rebased.append(RuleViolation(violation.code, violation.message, ""))
            elif path.startswith(prefix + "."):
                rebased.append(
                    RuleViolation(violation.code, violation.message, path[len(prefix) + 1 :])
                )
            else:
                rebased.append(
                    RuleViolation(violation.code, violation.message, path, f"case {case_key}")
                )
        refused.violations = rebased
        raise


def claim_url(claim_id: str) -> str:
    return reverse("api:claim-detail", kwargs={"claim_id": claim_id})


def claim_of(document: dict[str, Any], claim_id: Any) -> dict[str, Any] | None:
    return next((c for c in document["claims"] if c["id"] == claim_id), None)


CLAIM = openapi.ref("Claim")
CASE_KEY = openapi.key_parameter("case")
CLAIM_ID = OpenApiParameter(
    "claim_id", str, OpenApiParameter.PATH, description="the claim's permanent ID"
)


class CaseClaimsView(RefuseNul, APIView):
    """A case's claims: list them, add one (one revision of the case)."""

    permission_classes = [ClaimPermission]
    parser_classes = [DocumentJSONParser]

    @extend_schema(
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
            **openapi.error_responses(*openapi.PUBLIC_READ_ERRORS, query=True),
        },
    )
    def get(self, request: Request, key: str) -> Response:
        revision = visible_revision(request.user, "case", key)
        cached = not_modified(request, revision)
        if cached is not None:
            return cached
        visible = visible_document(request.user, "case", key, revision)
        if visible is None:
            raise RecordNotFound("case", key)
        return Response(visible.document["claims"], headers=etag_headers(visible.revision))

    @extend_schema(
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
            openapi.OpenApiExample(
                "a new claim",
                value={**(openapi.claim_example() or {}), "id": "CLM-CP22-003-D"},
                request_only=True,
            )
        ],
        responses={
            201: OpenApiResponse(response=CLAIM, description="the claim as stored"),
            **openapi.error_responses(
                *openapi.WRITE_ERRORS, 412, bad_request=openapi.CLAIM_REFUSAL
            ),
        },
    )
    def post(self, request: Request, key: str) -> Response:
        params = write_params(request)
        claim = request.data
        raw_position = request.query_params.get("position")
        position = None if raw_position in (None, "") else int_param(raw_position, "position")

        def write(expected):
            current = visible_document(request.user, "case", key)
            if current is None:
                raise RecordNotFound("case", key)
            count = len(current.document["claims"])
            index = count if position is None else min(position, count)
            with claim_paths(key, index):
                return claim_add(
                    user=request.user,
                    case_key=key,
                    claim=claim,
                    position=position,
                    expected_revision=expected,
                    **params,
                )

        outcome = guarded_write(request, "case", key, write)
        claim_id = claim.get("id") if isinstance(claim, dict) else None
        location = request.build_absolute_uri(claim_url(claim_id))
        return written(
            outcome,
            body=claim_of(outcome.document, claim_id),
            status=201,
            headers={"Location": location},
        )


class ClaimDetailView(RefuseNul, APIView):
    """One claim, by its permanent ID: read, replace, patch, withdraw."""

    permission_classes = [ClaimPermission]
    parser_classes = [DocumentJSONParser, MergePatchParser]

    def _claim(self, request: Request, claim_id: str):
        found = visible_claim(request.user, claim_id)
        if found is None:
            raise RecordNotFound("claim", claim_id)
        return found

    def _write(self, request: Request, claim_id: str, service, *, required: bool = False):
        """Run one claim service on the claim's case, guarded by the case's revision."""
        case_key = self._claim(request, claim_id).case.key

        def write(expected):
            found = self._claim(request, claim_id)
            with claim_paths(case_key, found.index):
                return service(found, expected)

        outcome = guarded_write(
            request, "case", case_key, write, required=required, label=f"case {case_key}"
        )
        return written(
            outcome, body=claim_of(outcome.document, claim_id), headers=self._up(case_key)
        )

    def _up(self, case_key: str) -> dict[str, str]:
        return {"Link": f'<{record_url("case", case_key)}>; rel="up"'}

    @extend_schema(
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
            **openapi.error_responses(*openapi.PUBLIC_READ_ERRORS, query=True),
        },
    )
    def get(self, request: Request, claim_id: str) -> Response:
        found = self._claim(request, claim_id)
        cached = not_modified(request, found.case.revision)
        if cached is not None:
            return cached
        return Response(
            found.claim,
            headers={**etag_headers(found.case.revision), **self._up(found.case.key)},
        )

    @extend_schema(
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
                *openapi.WRITE_ERRORS, 412, 428, bad_request=openapi.CLAIM_REFUSAL
            ),
        },
    )
    def put(self, request: Request, claim_id: str) -> Response:
        params = write_params(request)
        claim = request.data
        return self._write(
            request,
            claim_id,
            lambda found, expected: claim_update(
                user=request.user,
                claim_id=claim_id,
                claim=claim,
                expected_revision=expected,
                **params,
            ),
            required=True,
        )

    @extend_schema(
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
                *openapi.WRITE_ERRORS, 412, bad_request=openapi.CLAIM_REFUSAL
            ),
        },
    )
    def patch(self, request: Request, claim_id: str) -> Response:
        params = write_params(request)
        patch = request.data
        return self._write(
            request,
            claim_id,
            lambda found, expected: claim_update(
                user=request.user,
                claim_id=claim_id,
                claim=merge_patch(found.claim, patch),
                expected_revision=expected,
                **params,
            ),
        )

    @extend_schema(
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
            **openapi.error_responses(400, 401, 403, 404, 412),
        },
    )
    def delete(self, request: Request, claim_id: str) -> Response:
        params = write_params(request)
        return self._write(
            request,
            claim_id,
            lambda found, expected: claim_withdraw(
                user=request.user, claim_id=claim_id, expected_revision=expected, **params
            ),
        )
