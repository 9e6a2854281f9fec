"""The revision ledger over REST: the global log, one revision, a case's history, diffs and
reverts.

Users with a role read every revision; everyone else only the revisions a release points
at (``access.visible_revisions``): the log, a case's history and diffs are made of
those, and any other revision number is a 404 (a 400 ``revision.not_of_record`` in a
diff, as for a number that does not exist). A released revision never changes: it is
served with ``Cache-Control: public, max-age=31536000, immutable``.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import mixins
from rest_framework import serializers as drf_serializers
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claimsdb import http_caching
from claimsdb.access import may_read_working_state, visible_revision_number, visible_revisions
from claimsdb.codes import RevisionCode
from claimsdb.models import Revision
from claimsdb.records import RecordNotFound, RuleViolation, canonical, diff
from claimsdb.selectors.approvals import approvals_of_revisions
from claimsdb.services import revision_revert

from . import filters
from .approval_views import approval_summary
from .common import (
    DocumentJSONParser,
    NoFormSerializer,
    RefuseNul,
    RevisionFeedPagination,
    StableOrderingFilter,
    etag_headers,
    expected_revision,
    int_param,
    not_modified,
    write_params,
)
from .errors import RequestViolations
from .permissions import PublicReads, ReviewerOnly
from .schema import revisions as schema
from .views import written


def revision_summary(revision: Revision) -> dict[str, Any]:
    return {
        "number": revision.number,
        "record_kind": revision.record_kind,
        "record_key": revision.record_key,
        "action": revision.action,
        "material": revision.material,
        "summary": revision.summary,
        "author": revision.author.get_username(),
        "created_at": revision.created_at.isoformat().replace("+00:00", "Z"),
        "snapshot_sha256": revision.snapshot_sha256,
        "previous_hash": revision.previous_hash,
        "chain_hash": revision.chain_hash,
    }


def revision_detail(revision: Revision) -> dict[str, Any]:
    return {**revision_summary(revision), "snapshot": canonical.loads(revision.snapshot)}


@schema.REVISION_LIST
class RevisionListView(RefuseNul, mixins.ListModelMixin, GenericAPIView):
    """The global ledger, oldest first, in keyset pages (``?cursor=`` from the ``next`` and
    ``previous`` links); ``?since=n`` for what came after revision n."""

    permission_classes = [PublicReads]
    serializer_class = NoFormSerializer
    filter_backends = [DjangoFilterBackend, StableOrderingFilter]
    filterset_class = filters.RevisionFilter
    pagination_class = RevisionFeedPagination
    ordering_fields = ["number"]
    ordering = ["number"]
    ordering_unique = "number"

    def get_queryset(self):
        return visible_revisions(getattr(self.request, "user", None))

    def feed_count(self, queryset) -> int:
        """The feed's ``count``. Revision numbers are gapless from 1, so a reader of the
        working state who filters on nothing but ``since`` is counted from the newest number
        (one index lookup), not by counting a ledger of a million rows on every poll."""
        names = set(filters.RevisionFilter.base_filters) - {"since"}
        if not may_read_working_state(self.request.user) or any(
            self.request.query_params.get(name) for name in names
        ):
            return queryset.count()
        head = Revision.objects.order_by("-number").values_list("number", flat=True).first()
        # as the filter read it (it has refused anything else already)
        since = forms.IntegerField(required=False).clean(self.request.query_params.get("since"))
        return max((head or 0) - (since or 0), 0)

    def get(self, request: Request, **kwargs) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        # each revision with its approval, if it has one (one query for the page): a mirror
        # follows who reviewed what (docs/review.md; new approvals of old revisions come
        # in /approvals/?since=)
        approvals = approvals_of_revisions(revision.pk for revision in page)
        return self.get_paginated_response(
            [
                {
                    **revision_summary(r),
                    "approval": approval_summary(approvals[r.pk]) if r.pk in approvals else None,
                }
                for r in page
            ]
        )


@schema.CASE_REVISIONS
class CaseRevisionsView(RevisionListView):
    """One case's history."""

    filterset_class = filters.CaseRevisionFilter

    def get_queryset(self):
        key = self.kwargs.get("key", "")
        return super().get_queryset().filter(record_kind="case", record_key=key)

    def feed_count(self, queryset) -> int:
        return queryset.count()  # one record's revisions, through its index

    def get(self, request: Request, key: str) -> Response:
        if visible_revision_number(request.user, "case", key) is None:
            raise RecordNotFound("case", key)
        return super().get(request)


@schema.REVISION_DETAIL
class RevisionDetailView(RefuseNul, APIView):
    permission_classes = [PublicReads]

    def get(self, request: Request, number: str) -> Response:
        revision = None
        if number.isdigit() and len(number) < 19:
            revision = visible_revisions(request.user).filter(number=int(number)).first()
        if revision is None:
            raise RecordNotFound("revision", number)
        response = not_modified(request, revision.number) or Response(
            revision_detail(revision), headers=etag_headers(revision.number)
        )
        http_caching.immutable_headers(response, revision.number)
        return response


def _revision_of_case(user, key: str, number: int, name: str) -> Revision:
    revision = visible_revisions(user).filter(number=number).first()
    if revision is None or (revision.record_kind, revision.record_key) != ("case", key):
        raise RequestViolations(
            [
                RuleViolation(
                    RevisionCode.NOT_OF_RECORD,
                    f"revision {number} is not a revision of case {key}",
                    name,
                )
            ]
        )
    return revision


@schema.CASE_DIFF
class CaseDiffView(RefuseNul, APIView):
    permission_classes = [PublicReads]

    def get(self, request: Request, key: str) -> Response:
        latest = visible_revision_number(request.user, "case", key)
        if latest is None:
            raise RecordNotFound("case", key)
        old_number = int_param(request.query_params.get("from"), "from", minimum=1)
        raw_to = request.query_params.get("to")
        new_number = latest if raw_to in (None, "") else int_param(raw_to, "to", minimum=1)
        old = _revision_of_case(request.user, key, old_number, "from")
        new = _revision_of_case(request.user, key, new_number, "to")
        changes = diff(canonical.loads(old.snapshot), canonical.loads(new.snapshot))
        return Response(
            {
                "case": key,
                "from": old.number,
                "to": new.number,
                "changes": [change.as_dict() for change in changes],
            }
        )


class RevertRequestSerializer(drf_serializers.Serializer):
    """Validates a revert request's body (reading only; the service writes)."""

    revision = drf_serializers.IntegerField(min_value=1, max_value=2**63 - 1)


@schema.CASE_REVERT
class CaseRevertView(RefuseNul, APIView):
    permission_classes = [ReviewerOnly]
    parser_classes = [DocumentJSONParser]

    def post(self, request: Request, key: str) -> Response:
        params = write_params(request)
        body = RevertRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        if visible_revision_number(request.user, "case", key) is None:
            raise RecordNotFound("case", key)
        number = body.validated_data["revision"]
        _revision_of_case(request.user, key, number, "revision")
        outcome = revision_revert(
            user=request.user,
            number=number,
            expected_revision=expected_revision(request, "case", key),
            **params,
        )
        return written(outcome)
