"""Reads of the review queue and of review comments (docs/review.md).

The queue is the records whose latest revision is not approved, oldest waiting first
(``ReviewState.waiting_since``, then its id): a page is a walk along the partial index of
waiting records from a cursor, never an OFFSET, and its details — authors, revision counts,
the two snapshots of each diff, claim origins, case statuses — are read for the page's
records together, so a page costs the same number of queries at any depth and size.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet

from claimsdb.models import Case, Claim, ReviewComment, ReviewState, ReviewStateAuthor, Revision
from claimsdb.records import canonical, diff
from claimsdb.records.diff import Change

PAGE_SIZE = 25
MAX_PAGE_SIZE = 100


class CursorInvalid(ValueError):
    """An ``after`` cursor the queue did not hand out."""


@dataclass(frozen=True)
class QueueFilters:
    """What a queue is narrowed to: a record kind, an author's username, a case tag, a case
    status (the last two leave only cases)."""

    kind: str = ""
    author: str = ""
    tag: str = ""
    status: str = ""

    def as_query(self) -> dict[str, str]:
        return {name: value for name, value in vars(self).items() if value}


def waiting_records(filters: QueueFilters = QueueFilters()) -> QuerySet[ReviewState]:
    """Every record that waits for review, oldest waiting first, narrowed by ``filters``."""
    states = ReviewState.objects.filter(waiting_since__isnull=False)
    if filters.kind:
        states = states.filter(record_kind=filters.kind)
    if filters.author:
        states = states.filter(
            pk__in=ReviewStateAuthor.objects.filter(author__username=filters.author).values(
                "state_id"
            )
        )
    if filters.tag or filters.status:
        cases = Case.objects.all()
        if filters.tag:
            cases = cases.filter(tags__name=filters.tag)
        if filters.status:
            cases = cases.filter(status=filters.status)
        states = states.filter(record_kind="case", record_key__in=cases.values("key"))
    return states.order_by("waiting_since", "id")


def waiting_for(states: QuerySet[ReviewState], user: User) -> QuerySet[ReviewState]:
    """The records among ``states`` that wait with a change by ``user``."""
    return states.filter(pk__in=ReviewStateAuthor.objects.filter(author=user).values("state_id"))


def waiting_without(states: QuerySet[ReviewState], user: User) -> QuerySet[ReviewState]:
    """The records among ``states`` that ``user`` could approve: none of whose waiting
    changes they made."""
    return states.exclude(pk__in=ReviewStateAuthor.objects.filter(author=user).values("state_id"))


# --- cursors ---------------------------------------------------------------------------


def encode_cursor(state: ReviewState) -> str:
    assert state.waiting_since is not None
    raw = f"{state.waiting_since.isoformat()}|{state.pk}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[dt.datetime, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        moment, pk = raw.split("|")
        when = dt.datetime.fromisoformat(moment)
        if when.tzinfo is None:
            raise ValueError("naive time")
        return when, int(pk)
    except (ValueError, UnicodeDecodeError, binascii.Error) as error:
        raise CursorInvalid(cursor) from error


# --- a page ----------------------------------------------------------------------------


@dataclass
class QueueItem:
    """One waiting record as the queue shows it."""

    state: ReviewState
    authors: list[str] = field(default_factory=list)
    status: str = ""  # a case's status
    open_comments: int = 0  # reviewers' comments no revision addressed yet
    origins: list[str] = field(default_factory=list)  # a case's claims' origins
    approved_document: dict[str, Any] | None = None
    latest_document: dict[str, Any] | None = None

    @property
    def kind(self) -> str:
        return self.state.record_kind

    @property
    def key(self) -> str:
        return self.state.record_key

    @property
    def revisions(self) -> int:
        """How many revisions since the approved one."""
        return self.state.waiting_count

    @property
    def changes(self) -> list[Change]:
        return diff(self.approved_document, self.latest_document)

    def as_dict(self) -> dict[str, Any]:
        state = self.state
        return {
            "kind": state.record_kind,
            "key": state.record_key,
            "approved_revision": state.approved_number,
            "first_waiting_revision": state.waiting_from,
            "latest_revision": state.latest_number,
            "revisions_waiting": self.revisions,
            "waiting_since": state.waiting_since.isoformat() if state.waiting_since else None,
            "change": "material" if state.material else "editorial",
            "authors": self.authors,
            "case_status": self.status or None,
            "claim_origins": self.origins,
            "open_comments": self.open_comments,
            "changes": [change.as_dict() for change in self.changes],
        }


@dataclass(frozen=True)
class QueuePage:
    items: list[QueueItem]
    count: int
    next_cursor: str  # empty on the last page


def queue_page(
    states: QuerySet[ReviewState],
    *,
    after: str = "",
    size: int = PAGE_SIZE,
    documents: bool = True,
) -> QueuePage:
    """The page of ``states`` (ordered by ``waiting_records``) after the cursor ``after``:
    seven queries whatever the page, the queue's length or its records' histories (six
    without ``documents``, the snapshots of the diffs; two fewer on a page without cases)."""
    count = states.count()
    page = states
    if after:
        since, pk = decode_cursor(after)
        page = page.filter(Q(waiting_since__gt=since) | Q(waiting_since=since, pk__gt=pk))
    rows = list(page[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    items = [QueueItem(state) for state in rows]
    load_details(items, documents=documents)
    return QueuePage(items, count, encode_cursor(rows[-1]) if more and rows else "")


def load_details(items: list[QueueItem], *, documents: bool = True) -> None:
    """Fill in the authors, open comment counts, case statuses and claim origins (and the two
    documents of each diff) of these items, a query each for all of them."""
    if not items:
        return
    by_state = {item.state.pk: item for item in items}
    by_record = {(item.kind, item.key): item for item in items}
    for state_id, username in (
        ReviewStateAuthor.objects.filter(state_id__in=by_state)
        .order_by("author__username")
        .values_list("state_id", "author__username")
    ):
        by_state[state_id].authors.append(username)
    records = Q(pk__in=[])
    for kind in {item.kind for item in items}:
        records |= Q(record_kind=kind, record_key__in=[i.key for i in items if i.kind == kind])
    for kind, key, count in (
        ReviewComment.objects.filter(records, addressed_in=None, resolved_at=None)
        .order_by()
        .values_list("record_kind", "record_key")
        .annotate(n=Count("pk"))
    ):
        by_record[(kind, key)].open_comments = count
    case_keys = [item.key for item in items if item.kind == "case"]
    if case_keys:
        for key, status in Case.objects.filter(key__in=case_keys).values_list("key", "status"):
            by_record[("case", key)].status = status
        for key, origin in (
            Claim.objects.filter(case__key__in=case_keys)
            .order_by("case__key", "origin")
            .values_list("case__key", "origin")
            .distinct()
        ):
            by_record[("case", key)].origins.append(origin)
    if not documents:
        return
    numbers = {item.state.latest_number for item in items}
    numbers |= {item.state.approved_number for item in items if item.state.approved_number}
    snapshots = dict(Revision.objects.filter(number__in=numbers).values_list("number", "snapshot"))
    for item in items:
        item.latest_document = canonical.loads(snapshots[item.state.latest_number])
        if item.state.approved_number is not None:
            item.approved_document = canonical.loads(snapshots[item.state.approved_number])


def record_state(kind: str, key: str) -> ReviewState | None:
    return ReviewState.objects.filter(record_kind=kind, record_key=key).first()


def waiting_revisions(state: ReviewState) -> QuerySet[Revision]:
    """The revisions a record waits to have reviewed, oldest first, without snapshots."""
    if state.waiting_from is None:
        return Revision.objects.none()
    return (
        Revision.objects.filter(
            record_kind=state.record_kind,
            record_key=state.record_key,
            number__gte=state.waiting_from,
        )
        .select_related("author")
        .defer("snapshot")
        .order_by("number")
    )


# --- comments --------------------------------------------------------------------------


def open_comments(kind: str, key: str) -> list[ReviewComment]:
    """The comments on a record that no revision addressed and no reviewer resolved, oldest
    first, with their authors: one query, along the partial index of open comments."""
    return list(
        ReviewComment.objects.filter(
            record_kind=kind, record_key=key, addressed_in=None, resolved_at=None
        )
        .select_related("author")
        .order_by("created_at", "id")
    )


def comments_by_path(comments: list[ReviewComment]) -> dict[str, list[ReviewComment]]:
    """Open comments by the top-level field they name (``claims`` for
    ``claims[CLM-X].statement``; ``""`` for the whole record): where a page shows them."""
    placed: dict[str, list[ReviewComment]] = {}
    for comment in comments:
        top = comment.path.split(".", 1)[0].split("[", 1)[0]
        placed.setdefault(top, []).append(comment)
    return placed


def comments_for(user: User, *, limit: int = 50) -> QuerySet[ReviewComment]:
    """The newest comments on changes ``user`` made."""
    return (
        ReviewComment.objects.filter(addressed_to=user)
        .select_related("author")
        .order_by("-created_at", "-id")[:limit]
    )
