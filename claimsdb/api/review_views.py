"""The review queue over REST (docs/review.md): the waiting records, a page at a time by
cursor, and a reviewer's request for changes. Approving is the approvals endpoint's."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework import serializers as drf_serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claimsdb import access
from claimsdb.codes import ReviewCode
from claimsdb.models import ReviewComment
from claimsdb.records import RecordNotFound, RuleViolation
from claimsdb.records.kinds import record_kinds
from claimsdb.selectors import review as review_reads
from claimsdb.services import review_queue

from .common import DocumentJSONParser, RefuseNul, int_param
from .errors import RequestViolations
from .permissions import ReviewQueuePermission
from .rest import page_response
from .schema import review as schema


def comment_dict(comment: ReviewComment) -> dict[str, Any]:
    return {
        "id": comment.pk,
        "kind": comment.record_kind,
        "key": comment.record_key,
        "revision": comment.revision_number,
        "path": comment.path,
        "text": comment.text,
        "author": comment.author.get_username(),
        "created_at": comment.created_at.isoformat(),
        "addressed_in": comment.addressed_in,
        "resolved_at": comment.resolved_at.isoformat() if comment.resolved_at else None,
    }


@schema.REVIEW_QUEUE
class ReviewQueueView(RefuseNul, APIView):
    """``GET /api/v1/review-queue/``: the records waiting for review, oldest first.

    Filters ``kind``, ``author`` (a username), ``tag`` and ``status`` (of cases);
    ``page_size`` (25, at most 100); ``after`` (the cursor of ``next``); ``changes=0`` leaves
    the field-by-field diffs out. A reviewer reads every waiting record, an analyst those
    with a change of their own."""

    permission_classes = [ReviewQueuePermission]

    def get(self, request: Request) -> Response:
        params = request.query_params
        filters = review_reads.QueueFilters(
            kind=params.get("kind", ""),
            author=params.get("author", ""),
            tag=params.get("tag", ""),
            status=params.get("status", ""),
        )
        size = int_param(params.get("page_size", review_reads.PAGE_SIZE), "page_size", minimum=1)
        size = min(size, review_reads.MAX_PAGE_SIZE)
        documents = params.get("changes", "1") != "0"
        states = access.review_queue(request.user, review_reads.waiting_records(filters))
        try:
            page = review_reads.queue_page(
                states, after=params.get("after", ""), size=size, documents=documents
            )
        except review_reads.CursorInvalid as error:
            raise RequestViolations(
                [
                    RuleViolation(
                        ReviewCode.CURSOR_INVALID,
                        "take the cursor from a page's next link",
                        "after",
                    )
                ]
            ) from error
        next_url = None
        if page.next_cursor:
            query = request.query_params.copy()
            query["after"] = page.next_cursor
            next_url = request.build_absolute_uri(f"{request.path}?{query.urlencode()}")
        results = []
        for item in page.items:
            data = item.as_dict()
            if not documents:
                data.pop("changes")
            data["review_url"] = request.build_absolute_uri(
                reverse("review-record", args=[item.kind, item.key])
            )
            results.append(data)
        body = {"count": page.count, "next": next_url, "results": results}
        return page_response(request, body, {"next": next_url})


class CommentSerializer(drf_serializers.Serializer):
    path = drf_serializers.CharField(allow_blank=True, max_length=500, default="")
    text = drf_serializers.CharField(allow_blank=True, trim_whitespace=False)


class RequestChangesSerializer(drf_serializers.Serializer):
    revision = drf_serializers.IntegerField(min_value=1, max_value=2**63 - 1)
    comments = CommentSerializer(many=True)


@schema.REVIEW_COMMENTS
class RecordCommentsView(RefuseNul, APIView):
    """``GET /api/v1/review-queue/<kind>/<key>/comments/``: a record's open review comments.
    ``POST`` (reviewers) requests changes: ``{"revision": n, "comments": [{"path": …,
    "text": …}]}``, where ``n`` must be the record's latest revision (412 otherwise, nothing
    written); 201 with the comments written."""

    permission_classes = [ReviewQueuePermission]
    parser_classes = [DocumentJSONParser]

    def get(self, request: Request, kind: str, key: str) -> Response:
        if kind not in record_kinds or review_reads.record_state(kind, key) is None:
            raise RecordNotFound(kind, key)
        comments = review_reads.open_comments(kind, key)
        return Response({"results": [comment_dict(comment) for comment in comments]})

    def post(self, request: Request, kind: str, key: str) -> Response:
        if kind not in record_kinds:
            raise RecordNotFound(kind, key)
        body = RequestChangesSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        written = review_queue.request_changes(
            user=request.user,
            record_kind=kind,
            record_key=key,
            revision_number=body.validated_data["revision"],
            comments=[
                review_queue.CommentInput(path=comment["path"], text=comment["text"])
                for comment in body.validated_data["comments"]
            ],
        )
        return Response({"results": [comment_dict(comment) for comment in written]}, status=201)
