"""The review queue's pages, a record's review page, and each user's review feed
(docs/review.md).

A reviewer opens ``/review/``, the records whose latest revision is not approved, oldest
waiting first; a record's review page shows everything since its approved revision as one
diff, with two answers: *Approve* (through the approvals service: four eyes) and *Request
changes* (comments anchored to paths). Both forms carry the revision the page showed; if
the record moved on meanwhile nothing is written and the page shows the new diff.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.models import User
from django.contrib.syndication.views import Feed
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.crypto import constant_time_compare, salted_hmac
from django.utils.feedgenerator import Atom1Feed
from django.views.decorators.http import require_POST

from claimsdb import access, choices
from claimsdb.codes import ApprovalCode
from claimsdb.models import ReviewComment, ReviewState
from claimsdb.records import RuleViolation, RuleViolations, StaleRevision
from claimsdb.records.kinds import record_kinds
from claimsdb.selectors import review as review_reads
from claimsdb.services import review_queue
from claimsdb.services.approvals import approve

from .access import SignInRequired, reader_page, role_required
from .diffs import change_rows, path_label
from .editing import simple_service_call

RECORD_LABELS = dict(choices.RecordKind.choices)
FEED_SIZE = 50
COMMENT_ROWS = 3  # the request-changes form's empty comment rows


def _kind_or_404(kind: str) -> str:
    if kind not in RECORD_LABELS:
        raise Http404(f"no record kind {kind}")
    return kind


def review_url(kind: str, key: str, page: str = "review-record") -> str:
    return reverse(page, args=[kind, key])


def record_page_url(kind: str, key: str) -> str:
    return reverse(record_kinds.get(kind).url_name("detail"), args=[key])


def _require_queue(request: HttpRequest) -> None:
    if not request.user.is_authenticated:
        raise SignInRequired
    if not access.may_see_review_queue(request.user):
        raise PermissionDenied("the review queue needs the analyst or reviewer role")


# --- the queue --------------------------------------------------------------------------


def queue_filters(request: HttpRequest) -> review_reads.QueueFilters:
    """The queue's filters from the query string; unknown values filter to nothing."""
    return review_reads.QueueFilters(
        kind=request.GET.get("kind", "").strip(),
        author=request.GET.get("author", "").strip(),
        tag=request.GET.get("tag", "").strip(),
        status=request.GET.get("status", "").strip(),
    )


@reader_page
def review_queue_page(request: HttpRequest) -> HttpResponse:
    """``/review/``: the records waiting for review (a reviewer's whole queue; an
    analyst's own waiting changes), oldest first, a page at a time by cursor."""
    _require_queue(request)
    filters = queue_filters(request)
    states = access.review_queue(request.user, review_reads.waiting_records(filters))
    try:
        page = review_reads.queue_page(states, after=request.GET.get("after", ""))
    except review_reads.CursorInvalid:
        return HttpResponseRedirect(request.path)
    items = [
        {
            "item": item,
            "label": RECORD_LABELS[item.kind],
            "review_url": review_url(item.kind, item.key),
            "record_url": record_page_url(item.kind, item.key),
            "changed": changed_labels(item),
        }
        for item in page.items
    ]
    next_url = ""
    if page.next_cursor:
        query = request.GET.copy()
        query["after"] = page.next_cursor
        next_url = "?" + query.urlencode()
    return render(
        request,
        "review/queue.html",
        {
            "items": items,
            "count": page.count,
            "next_url": next_url,
            "first_url": request.path + _query_without(request, "after"),
            "paged": bool(request.GET.get("after")),
            "filters": filters,
            "kinds": choices.RecordKind.choices,
            "statuses": choices.CaseStatus.choices,
            "is_reviewer": access.may_approve(request.user),
            "feed_url": feed_url(request.user),
        },
    )


QUEUE_FIELDS_SHOWN = 12


def changed_labels(item: review_reads.QueueItem) -> dict[str, Any]:
    """The fields a waiting record changed since its approved revision, in words, for its
    line in the queue (the review page shows the diff itself): at most
    ``QUEUE_FIELDS_SHOWN``, and how many more."""
    labels: list[str] = []
    for change in item.changes:
        label = path_label(change.path)
        if label not in labels:
            labels.append(label)
    return {
        "labels": labels[:QUEUE_FIELDS_SHOWN],
        "more": max(0, len(labels) - QUEUE_FIELDS_SHOWN),
        "new": item.approved_document is None,
    }


def _query_without(request: HttpRequest, name: str) -> str:
    query = request.GET.copy()
    query.pop(name, None)
    encoded = query.urlencode()
    return f"?{encoded}" if encoded else ""


# --- one record's review --------------------------------------------------------------


def _review_context(request: HttpRequest, kind: str, key: str) -> dict[str, Any]:
    state = review_reads.record_state(kind, key)
    if state is None:
        raise Http404(f"no {kind} {key}")
    item = review_reads.QueueItem(state)
    review_reads.load_details([item])
    rows = change_rows(item.changes) if state.waiting else []
    revisions = list(review_reads.waiting_revisions(state))
    own = any(revision.author_id == request.user.pk for revision in revisions)
    comments = review_reads.open_comments(kind, key)
    return {
        "kind": kind,
        "kind_label": RECORD_LABELS[kind],
        "key": key,
        "state": state,
        "item": item,
        "rows": rows,
        "revisions": revisions,
        "comments": comments,
        "own_change": own,
        "can_review": access.may_approve(request.user),
        "record_url": record_page_url(kind, key),
        "approve_url": review_url(kind, key, "review-approve"),
        "request_url": review_url(kind, key, "review-request-changes"),
        "paths": [("", "The whole record")]
        + [(row.path, row.label) for row in rows if not row.path.endswith(":order")],
        "comment_rows": range(COMMENT_ROWS),
    }


@reader_page
def record_review_page(request: HttpRequest, kind: str, key: str) -> HttpResponse:
    """A record's review page: what changed since its approved revision, by whom, the open
    comments, and (for reviewers) the two answers."""
    _require_queue(request)
    context = _review_context(request, _kind_or_404(kind), key)
    return render(request, "review/record.html", context)


def _render_refused(
    request: HttpRequest,
    kind: str,
    key: str,
    *,
    stale: StaleRevision | None = None,
    violations: list[RuleViolation] | None = None,
    data: Any = None,
) -> HttpResponse:
    context = _review_context(request, kind, key)
    context.update({"stale": stale, "violations": violations or [], "data": data})
    return render(request, "review/record.html", context, status=409 if stale else 422)


def _posted_revision(request: HttpRequest) -> int:
    try:
        return int(request.POST.get("revision", ""))
    except ValueError as error:
        raise PermissionDenied("the form did not say which revision it shows") from error


@require_POST
@role_required("reviewer")
def request_changes_view(request: HttpRequest, kind: str, key: str) -> HttpResponse:
    """Write a reviewer's comments on the revision the page showed (``revision``)."""
    kind = _kind_or_404(kind)
    number = _posted_revision(request)
    paths, texts = request.POST.getlist("path"), request.POST.getlist("text")
    comments = [
        review_queue.CommentInput(path=path.strip(), text=text)
        for path, text in zip(paths, texts, strict=False)
        if text.strip()
    ]
    state = review_reads.record_state(kind, key)
    old_rows = []
    if state is not None and state.waiting:
        item = review_reads.QueueItem(state)
        review_reads.load_details([item])
        old_rows = [change.path for change in item.changes]

    def refused(error: RuleViolations) -> HttpResponse:
        if isinstance(error, StaleRevision):
            return _render_refused(request, kind, key, stale=error, data=request.POST)
        return _render_refused(request, kind, key, violations=error.violations, data=request.POST)

    result = simple_service_call(
        request,
        lambda: review_queue.request_changes(
            user=request.user,
            record_kind=kind,
            record_key=key,
            revision_number=number,
            comments=comments,
            changed_paths=old_rows,
        ),
        on_refused=refused,
    )
    if isinstance(result, HttpResponse):
        return result
    messages.success(
        request,
        f"Requested changes to {key} at revision {number}: "
        f"{len(result)} comment{'s' if len(result) != 1 else ''}.",
    )
    return HttpResponseRedirect(reverse("review-queue"))


@require_POST
@role_required("reviewer")
def approve_view(request: HttpRequest, kind: str, key: str) -> HttpResponse:
    """Approve the revision the page showed (``revision``), with an optional note, through
    the approvals service: it refuses a stale revision (the record moved on: the page shows
    the new diff) and a range holding a change of the reviewer's own (four eyes)."""
    kind = _kind_or_404(kind)
    number = _posted_revision(request)

    def refused(error: RuleViolations) -> HttpResponse:
        if isinstance(error, StaleRevision):  # approval.stale
            return _render_refused(request, kind, key, stale=error, data=request.POST)
        response = _render_refused(
            request, kind, key, violations=error.violations, data=request.POST
        )
        if ApprovalCode.OWN_CHANGE in error.codes:
            response.status_code = 403
        return response

    result = simple_service_call(
        request,
        lambda: approve(
            user=request.user,
            record_kind=kind,
            record_key=key,
            revision_number=number,
            note=request.POST.get("note", "").strip(),
        ),
        on_refused=refused,
    )
    if isinstance(result, HttpResponse):
        return result
    messages.success(request, f"Approved revision {number} of {key}.")
    return HttpResponseRedirect(reverse("review-queue"))


@require_POST
@role_required("reviewer")
def comment_resolve_view(request: HttpRequest, comment_id: int) -> HttpResponse:
    comment = get_object_or_404(ReviewComment, pk=comment_id)
    review_queue.comment_resolve(user=request.user, comment_id=comment.pk)
    messages.success(request, "The comment is resolved.")
    target = request.POST.get("next", "")
    if not target.startswith("/") or target.startswith("//"):
        target = review_url(comment.record_kind, comment.record_key)
    return HttpResponseRedirect(target)


# --- the feed ---------------------------------------------------------------------------


def feed_token(user: User) -> str:
    """The secret in a user's feed URL: an HMAC of their id and password hash under the
    site's secret key. Changing the password (or the secret key) revokes it."""
    return salted_hmac("claimsdb.review-feed", f"{user.pk}:{user.password}").hexdigest()[:40]


def feed_url(user: Any) -> str:
    if not getattr(user, "pk", None):
        return ""
    return reverse("review-feed-token", args=[user.pk, feed_token(user)])


class ReviewFeed(Feed):
    """A user's Atom feed: the records waiting for their review (a reviewer's, leaving out
    those with a change of their own) and the comments on their changes, newest first.

    Read with the session (``/review/feed.atom``) or, for a feed reader that holds no
    session, with the secret URL the queue page shows (``/review/feed/<id>/<token>/``)."""

    feed_type = Atom1Feed
    title = "claimsdb: your review"
    link = "/review/"
    subtitle = "Changes waiting for your review, and reviewers' comments on your changes."
    author_name = "claimsdb"

    def get_object(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        user_id, token = kwargs.get("user_id"), kwargs.get("token")
        if user_id is None:
            user = request.user
            if not user.is_authenticated:
                raise Http404("sign in, or use your feed's secret address")
        else:
            user = User.objects.filter(pk=user_id, is_active=True).first()
            if user is None or not constant_time_compare(feed_token(user), token or ""):
                raise Http404("no such feed")
        if not access.may_see_review_queue(user):
            raise Http404("no review feed for this account")
        return {"user": user, "root": request.build_absolute_uri("/").rstrip("/")}

    def items(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        user, root = obj["user"], obj["root"]
        entries: list[dict[str, Any]] = []
        if access.may_approve(user):
            states = review_reads.waiting_without(review_reads.waiting_records(), user)
            for state in states.order_by("-waiting_since", "-id")[:FEED_SIZE]:
                entries.append(_state_entry(state, root))
        for comment in review_reads.comments_for(user, limit=FEED_SIZE):
            entries.append(_comment_entry(comment, root))
        entries.sort(key=lambda entry: entry["time"], reverse=True)
        return entries[:FEED_SIZE]

    def item_title(self, item: dict[str, Any]) -> str:
        return item["title"]

    def item_description(self, item: dict[str, Any]) -> str:
        return item["text"]

    def item_link(self, item: dict[str, Any]) -> str:
        return item["link"]

    def item_guid(self, item: dict[str, Any]) -> str:
        return item["guid"]

    def item_pubdate(self, item: dict[str, Any]) -> Any:
        return item["time"]


def _state_entry(state: ReviewState, root: str) -> dict[str, Any]:
    label = RECORD_LABELS[state.record_kind]
    since = (
        f"since the reviewed revision {state.approved_number}"
        if state.approved_number
        else "never reviewed"
    )
    return {
        "title": f"{label.capitalize()} {state.record_key} awaits review",
        "text": f"Revisions {state.waiting_from}–{state.latest_number}, {since} "
        f"({'material' if state.material else 'editorial'}).",
        "link": root + review_url(state.record_kind, state.record_key),
        "guid": f"{root}/review/{state.record_kind}/{state.record_key}#r{state.latest_number}",
        "time": state.waiting_since,
    }


def _comment_entry(comment: ReviewComment, root: str) -> dict[str, Any]:
    where = path_label(comment.path) if comment.path else "the whole record"
    state = "open" if comment.is_open else "closed"
    return {
        "title": f"{comment.author.get_username()} asks for a change to "
        f"{comment.record_key} ({where})",
        "text": f"{comment.text}\n\n(on revision {comment.revision_number}; {state})",
        "link": root + record_page_url(comment.record_kind, comment.record_key),
        "guid": f"{root}/review/comments/{comment.pk}",
        "time": comment.created_at,
    }


# --- on record and edit pages ------------------------------------------------------------


class ReviewNotes:
    """What a signed-in reader of a record (or of one of its edit pages) is told of its
    review: whether its latest revision waits, how many changes since the reviewed one, and
    the open comments, placed at the fields they name.

    ``scope`` is the part of the record a page edits (``claims[CLM-X]`` on a claim's page,
    empty for the record's own fields): a comment at ``scope.field`` goes beside ``field``.
    """

    def __init__(self, kind: str, key: str, scope: str = "") -> None:
        self.kind, self.key = kind, key
        self.state = review_reads.record_state(kind, key)
        self.waiting = self.state.waiting_count if self.state is not None else 0
        self.comments = review_reads.open_comments(kind, key)
        self.by_field: dict[str, list[ReviewComment]] = {}
        prefix = f"{scope}." if scope else ""
        for comment in self.comments:
            comment.label = path_label(comment.path) if comment.path else "The whole record"
            if not comment.path.startswith(prefix):
                continue
            rest = comment.path[len(prefix) :]
            field = rest.split(".", 1)[0].split("[", 1)[0]
            self.by_field.setdefault(field, []).append(comment)
        self.review_url = review_url(kind, key)

    @property
    def banner(self) -> str:
        if self.state is None or not self.state.waiting:
            return ""
        changes = f"{self.waiting} change{'s' if self.waiting != 1 else ''}"
        if self.state.approved_number is None:
            return f"{changes}, never reviewed, awaiting review"
        return (
            f"{changes} since the reviewed revision {self.state.approved_number}, awaiting review"
        )


def review_notes(request: HttpRequest, kind: str, key: str, scope: str = "") -> ReviewNotes | None:
    """The review notes of a record for this request: None for readers of the released
    record, who see reviewed revisions only."""
    if not key or not access.may_see_review_comments(request.user):
        return None
    return ReviewNotes(kind, key, scope)
