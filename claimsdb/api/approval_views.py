"""Approvals over REST (docs/review.md): approving a record at a revision, what awaits
review on a record, and the approvals feed a mirror follows.

``POST /api/v1/<plural>/<key>/approvals/`` with ``{"revision": n, "note": "…"}`` approves
revision ``n`` of the record (reviewers): 201 and the approval; 412 ``approval.stale`` when
``n`` is not the record's latest revision, 403 ``approval.own_change`` (four eyes) or
``permission.denied``, 409 ``approval.already_approved``; nothing is written on a refusal.
``GET`` on the same URL (viewers and up) answers what an approval would cover: the
revisions since the approved one, their authors and the field-by-field diff, and the
record's approvals.
"""

from __future__ import annotations

from typing import Any

from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import mixins
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claimsdb.access import may_read_working_state, visible_approvals, visible_revision_number
from claimsdb.codes import ApprovalCode, DocumentCode
from claimsdb.models import Approval
from claimsdb.records import RecordNotFound, RuleViolation, RuleViolations
from claimsdb.records.kinds import record_kinds
from claimsdb.selectors.approvals import review_range
from claimsdb.services.approvals import approve

from . import filters
from .common import DocumentJSONParser, NoFormSerializer, RefuseNul, RevisionFeedPagination
from .errors import RequestViolations
from .permissions import ANYONE, PublicReads, ReviewerWrites
from .schema import approvals as schema

# What a refused approval answers, by code (any other refusal is a 400).
REFUSAL_STATUS = {
    ApprovalCode.OWN_CHANGE: 403,
    ApprovalCode.ALREADY_APPROVED: 409,
}
# How many of a record's approvals its approvals resource lists (newest first).
APPROVALS_LISTED = 50


def approval_summary(approval: Approval) -> dict[str, Any]:
    """An approval as the API gives it: what is hashed, and the chain."""
    return {
        "number": approval.number,
        "record_kind": approval.record_kind,
        "record_key": approval.record_key,
        "revision": approval.revision_number,
        "since_revision": approval.since_number,
        "reviewer": approval.reviewer.get_username(),
        "created_at": approval.created_at.isoformat().replace("+00:00", "Z"),
        "note": approval.note,
        "self_approved": approval.self_approved,
        "status": approval.status,
        "previous_hash": approval.previous_hash,
        "chain_hash": approval.chain_hash,
    }


def _request_body(data: Any) -> tuple[int, str]:
    """The revision and note of an approval request, or a 400 naming the field."""
    if not isinstance(data, dict):
        raise RequestViolations([RuleViolation(DocumentCode.TYPE, "the body is a JSON object", "")])
    revision = data.get("revision")
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
        raise RequestViolations(
            [
                RuleViolation(
                    ApprovalCode.REVISION_REQUIRED,
                    "name the revision you approve: `revision`, the record's latest revision "
                    "number (the one whose diff you reviewed)",
                    "revision",
                )
            ]
        )
    note = data.get("note", "")
    if note is None:
        note = ""
    if not isinstance(note, str):
        raise RequestViolations([RuleViolation(DocumentCode.TYPE, "`note` is a string", "note")])
    return revision, note


class PublicReadsReviewerApproves(ReviewerWrites):
    """Anyone reads (what they may see of the record); reviewers approve."""

    read_role = ANYONE


class RecordApprovalsView(RefuseNul, APIView):
    permission_classes = [PublicReadsReviewerApproves]
    parser_classes = [DocumentJSONParser]
    kind = ""

    def get(self, request: Request, key: str) -> Response:
        """Readers of the working state see what awaits review and every approval; everyone
        else the approvals of the released revisions only (``review`` is null: what is not
        released does not exist for them)."""
        if visible_revision_number(request.user, self.kind, key) is None:
            raise RecordNotFound(self.kind, key)
        approvals = visible_approvals(request.user).filter(record_kind=self.kind, record_key=key)
        listed = [
            approval_summary(approval)
            for approval in approvals.order_by("-revision_number")[:APPROVALS_LISTED]
        ]
        if not may_read_working_state(request.user):
            return Response(
                {
                    "record_kind": self.kind,
                    "record_key": key,
                    "awaiting_review": None,
                    "review": None,
                    "approvals": listed,
                }
            )
        pending = review_range(self.kind, key)
        return Response(
            {
                "record_kind": self.kind,
                "record_key": key,
                "awaiting_review": pending.pending,
                "review": pending.as_dict(),
                "approvals": listed,
            }
        )

    def post(self, request: Request, key: str) -> Response:
        revision, note = _request_body(request.data)
        try:
            approval = approve(
                user=request.user,
                record_kind=self.kind,
                record_key=key,
                revision_number=revision,
                note=note,
            )
        except RuleViolations as refused:
            status = next(
                (REFUSAL_STATUS[code] for code in refused.codes if code in REFUSAL_STATUS), None
            )
            if status is None:
                raise
            raise RequestViolations(refused.violations, status_code=status) from refused
        return Response(approval_summary(approval), status=201)


@schema.APPROVAL_LIST
class ApprovalListView(RefuseNul, mixins.ListModelMixin, GenericAPIView):
    """Every approval, oldest first, in keyset pages (``?since=n`` for what came after
    approval n): what a mirror follows beside the revision feed. Without a role: the
    approvals of released revisions."""

    permission_classes = [PublicReads]
    serializer_class = NoFormSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = filters.ApprovalFilter
    pagination_class = RevisionFeedPagination

    def get_queryset(self):
        return visible_approvals(getattr(self.request, "user", None)).order_by("number")

    def get(self, request: Request, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response([approval_summary(a) for a in page])


# one view per kind, each with its own operations in the schema
RECORD_APPROVAL_VIEWS: dict[str, type[RecordApprovalsView]] = {
    kind.name: schema.record_approvals(kind.name)(
        type(f"{kind.name.title()}ApprovalsView", (RecordApprovalsView,), {"kind": kind.name})
    )
    for kind in record_kinds
}
