"""Records (cases, sources, rules, methods, components) and claims over REST.

Each view reads through the access policy (``claimsdb.access``) — the working state for
users with a role, the released record for everyone else — or translates its input into
one service call and the outcome into a response; the services' refusals become errors in
``errors.exception_handler``. Nothing here writes a model. Each kind of record has its list
and detail view, declared below on the shared ``RecordListView`` and ``RecordDetailView``;
what the OpenAPI schema says of them is in ``schema/records.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.urls import reverse
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import mixins
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claimsdb.access import (
    may_read_working_state,
    visible_claim,
    visible_document,
    visible_records,
    visible_revision_number,
)
from claimsdb.public import ReleasedRecords
from claimsdb.records import RecordNotFound, RuleViolations
from claimsdb.records.kinds import record_kinds
from claimsdb.selectors.pages import page_keys, rows_in_order
from claimsdb.selectors.revisions import latest_revision_number
from claimsdb.services import (
    ClaimRefused,
    claim_add,
    claim_patch,
    claim_update,
    claim_withdraw,
    record_create,
    record_patch,
    record_update,
    record_withdraw,
)
from claimsdb.services.claims import claim_case_key
from claimsdb.services.writer import WriteOutcome

from . import filters
from .common import (
    DocumentJSONParser,
    MergePatchParser,
    NoFormSerializer,
    Pagination,
    RefuseNul,
    StableOrderingFilter,
    etag_headers,
    expected_revision,
    int_param,
    not_modified,
    write_params,
)
from .permissions import ClaimPermission, RecordPermission
from .schema import records as schema
from .visibility import page_documents, working_case, working_case_document


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
        records through the access policy."""
        return record_kinds.get(self.kind).model.objects.none()

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
            {"key": row.key, "revision": row.revision, "document": document}
            for row, document in zip(page, page_documents(self.kind, page), strict=True)
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
        revision = visible_revision_number(request.user, self.kind, key)
        cached = not_modified(request, revision)
        if cached is not None:
            return cached
        visible = visible_document(request.user, self.kind, key, revision)
        if visible is None:
            raise RecordNotFound(self.kind, key)
        return Response(visible.document, headers=etag_headers(visible.revision))

    def put(self, request: Request, key: str) -> Response:
        params = write_params(request)
        outcome = record_update(
            user=request.user,
            kind=self.kind,
            key=key,
            document=request.data,
            expected_revision=expected_revision(request, self.kind, key, required=True),
            **params,
        )
        return written(outcome)

    def patch(self, request: Request, key: str) -> Response:
        params = write_params(request)
        outcome = record_patch(
            user=request.user,
            kind=self.kind,
            key=key,
            patch=request.data,
            expected_revision=expected_revision(request, self.kind, key),
            **params,
        )
        return written(outcome)

    def delete(self, request: Request, key: str) -> Response:
        params = write_params(request)
        outcome = record_withdraw(
            user=request.user,
            kind=self.kind,
            key=key,
            expected_revision=expected_revision(request, self.kind, key),
            **params,
        )
        return written(outcome)


@schema.record_list("case")
class CaseListView(RecordListView):
    """List and create cases."""

    kind = "case"
    filterset_class = filters.CaseFilter
    ordering_fields = ["key", "title", "status", "revision"]


@schema.record_detail("case")
class CaseDetailView(RecordDetailView):
    """Read, replace, patch and withdraw one case."""

    kind = "case"


@schema.record_list("source")
class SourceListView(RecordListView):
    """List and create sources."""

    kind = "source"
    filterset_class = filters.SourceFilter
    ordering_fields = ["key", "title", "kind", "revision"]


@schema.record_detail("source")
class SourceDetailView(RecordDetailView):
    """Read, replace, patch and withdraw one source."""

    kind = "source"


@schema.record_list("rule")
class RuleListView(RecordListView):
    """List and create rules."""

    kind = "rule"
    filterset_class = filters.RuleFilter
    ordering_fields = ["key", "revision"]


@schema.record_detail("rule")
class RuleDetailView(RecordDetailView):
    """Read, replace, patch and withdraw one rule."""

    kind = "rule"


@schema.record_list("method")
class MethodListView(RecordListView):
    """List and create methods."""

    kind = "method"
    filterset_class = filters.MethodFilter
    ordering_fields = ["key", "revision"]


@schema.record_detail("method")
class MethodDetailView(RecordDetailView):
    """Read, replace, patch and withdraw one method."""

    kind = "method"


@schema.record_list("component")
class ComponentListView(RecordListView):
    """List and create components."""

    kind = "component"
    filterset_class = filters.ComponentFilter
    ordering_fields = ["key", "title", "kind", "revision"]


@schema.record_detail("component")
class ComponentDetailView(RecordDetailView):
    """Read, replace, patch and withdraw one component."""

    kind = "component"


# --- claims -----------------------------------------------------------------------------


@contextmanager
def claim_paths() -> Iterator[None]:
    """Make the paths of a claim write's violations point into the claim sent rather than
    into its case (``evidence``, not ``claims[3].evidence``; ``ClaimRefused``)."""
    try:
        yield
    except ClaimRefused as refused:
        raise RuleViolations(refused.seen_from_the_claim()) from None


def claim_url(claim_id: str) -> str:
    return reverse("api:claim-detail", kwargs={"claim_id": claim_id})


def claim_of(document: dict[str, Any], claim_id: Any) -> dict[str, Any] | None:
    return next((c for c in document["claims"] if c["id"] == claim_id), None)


@schema.CASE_CLAIMS
class CaseClaimsView(RefuseNul, APIView):
    """A case's claims: list them, add one (one revision of the case)."""

    permission_classes = [ClaimPermission]
    parser_classes = [DocumentJSONParser]

    def get(self, request: Request, key: str) -> Response:
        revision = visible_revision_number(request.user, "case", key)
        cached = not_modified(request, revision)
        if cached is not None:
            return cached
        visible = visible_document(request.user, "case", key, revision)
        if visible is None:
            raise RecordNotFound("case", key)
        return Response(visible.document["claims"], headers=etag_headers(visible.revision))

    def post(self, request: Request, key: str) -> Response:
        params = write_params(request)
        claim = request.data
        raw_position = request.query_params.get("position")
        position = None if raw_position in (None, "") else int_param(raw_position, "position")
        expected = expected_revision(request, "case", key)
        with claim_paths():
            outcome = claim_add(
                user=request.user,
                case_key=key,
                claim=claim,
                position=position,
                expected_revision=expected,
                **params,
            )
        claim_id = claim.get("id") if isinstance(claim, dict) else None
        location = request.build_absolute_uri(claim_url(claim_id))
        return written(
            outcome,
            body=claim_of(outcome.document, claim_id),
            status=201,
            headers={"Location": location},
        )


@schema.CLAIM_DETAIL
class ClaimDetailView(RefuseNul, APIView):
    """One claim, by its permanent ID: read, replace, patch, withdraw."""

    permission_classes = [ClaimPermission]
    parser_classes = [DocumentJSONParser, MergePatchParser]

    def _claim(self, request: Request, claim_id: str):
        found = visible_claim(request.user, claim_id)
        if found is None:
            raise RecordNotFound("claim", claim_id)
        return found

    def _written(self, outcome: WriteOutcome, claim_id: str) -> Response:
        """The claim as its case now holds it, with the case's ETag."""
        body = claim_of(outcome.document, claim_id)
        return written(outcome, body=body, headers=self._up(outcome.key))

    def _up(self, case_key: str) -> dict[str, str]:
        return {"Link": f'<{record_url("case", case_key)}>; rel="up"'}

    def get(self, request: Request, claim_id: str) -> Response:
        found = self._claim(request, claim_id)
        cached = not_modified(request, found.case.revision)
        if cached is not None:
            return cached
        return Response(
            found.claim,
            headers={**etag_headers(found.case.revision), **self._up(found.case.key)},
        )

    def put(self, request: Request, claim_id: str) -> Response:
        params = write_params(request)
        expected = expected_revision(request, "case", claim_case_key(claim_id), required=True)
        with claim_paths():
            outcome = claim_update(
                user=request.user,
                claim_id=claim_id,
                claim=request.data,
                expected_revision=expected,
                **params,
            )
        return self._written(outcome, claim_id)

    def patch(self, request: Request, claim_id: str) -> Response:
        params = write_params(request)
        expected = expected_revision(request, "case", claim_case_key(claim_id))
        with claim_paths():
            outcome = claim_patch(
                user=request.user,
                claim_id=claim_id,
                patch=request.data,
                expected_revision=expected,
                **params,
            )
        return self._written(outcome, claim_id)

    def delete(self, request: Request, claim_id: str) -> Response:
        params = write_params(request)
        expected = expected_revision(request, "case", claim_case_key(claim_id))
        with claim_paths():
            outcome = claim_withdraw(
                user=request.user, claim_id=claim_id, expected_revision=expected, **params
            )
        return self._written(outcome, claim_id)
