"""The review queue's state and reviewers' requests for changes (docs/review.md).

``ReviewState`` says, for each record, which revision was last approved and, while later
revisions wait, since when. It is kept here and only here:

* ``revisions_written`` — called by the ledger (``RevisionChain.save``) for every batch of
  revisions it inserts, under the ledger lock: a record that had nothing waiting starts
  waiting at its first new revision; the authors of the new revisions join its authors;
  open review comments that a new revision answers are marked addressed;
* ``records_approved`` — called by the approvals service with the approvals it writes: a
  record waits for nothing if its latest revision was approved, else from the revision
  after the approved one; comments on the approved revision or earlier are resolved by it.

``request_changes`` is the reviewer's other answer to a waiting record: comments anchored
to paths of the record at the revision they read, written only if that revision is still
the latest (``revision.stale`` otherwise), and sent to its authors by e-mail after commit.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import send_mail
from django.db import connection, transaction
from django.db.models import Max, Q, QuerySet
from django.utils import timezone

from claimsdb.codes import ReviewCode
from claimsdb.models import (
    Approval,
    ReviewComment,
    ReviewCommentRecipient,
    ReviewState,
    ReviewStateAuthor,
    Revision,
)
from claimsdb.records import RecordNotFound, RuleViolation, RuleViolations, canonical
from claimsdb.records.batched import fetch_together
from claimsdb.records.diff import KEYED_LISTS
from claimsdb.records.errors import StaleRevision

from .permissions import require_role
from .rows import column

logger = logging.getLogger("claimsdb.review")

COMMENT_MAX_LENGTH = 10_000
COMMENTS_PER_REQUEST = 50

# --- the state, on the write path -------------------------------------------------------


def revisions_written(revisions: Sequence[Revision]) -> None:
    """Bring the review state of the records these new revisions changed up to date.

    A fixed number of queries per batch: the states and the open comments read together (one
    round trip on PostgreSQL), one insert, one update, one insert of authors (and a write
    of the comments a revision addressed). It runs under the ledger lock, in every write."""
    if not revisions:
        return
    by_record: dict[tuple[str, str], list[Revision]] = {}
    for revision in revisions:
        by_record.setdefault((revision.record_kind, revision.record_key), []).append(revision)
    kinds: dict[str, list[str]] = {}
    for kind, key in by_record:
        kinds.setdefault(kind, []).append(key)
    read = fetch_together(
        {
            **{
                f"states:{kind}": ReviewState.objects.filter(record_kind=kind, record_key__in=keys)
                for kind, keys in kinds.items()
            },
            "comments": _open_comments(by_record),
        }
    )
    existing: dict[tuple[str, str], ReviewState] = {}
    for kind in kinds:
        for state in read[f"states:{kind}"]:
            existing[(state.record_kind, state.record_key)] = state
    new_states: list[ReviewState] = []
    changed_states: list[ReviewState] = []
    for record, written in by_record.items():
        first, last = written[0], written[-1]
        material = any(revision.material for revision in written)
        found = existing.get(record)
        if found is None:
            state = ReviewState(
                record_kind=record[0],
                record_key=record[1],
                latest_number=last.number,
                approved_number=None,
                waiting_from=first.number,
                waiting_since=first.created_at,
                waiting_count=len(written),
                material=material,
            )
            new_states.append(state)
            existing[record] = state
            continue
        state = found
        state.latest_number = last.number
        if state.waiting_from is None:
            state.waiting_from = first.number
            state.waiting_since = first.created_at
            state.waiting_count = len(written)
            state.material = material
        else:
            state.waiting_count += len(written)
            state.material = state.material or material
        changed_states.append(state)
    if new_states:
        ReviewState.objects.bulk_create(new_states, batch_size=1000)
        if any(state.pk is None for state in new_states):  # a database without RETURNING
            _read_back_ids(new_states)
    if changed_states:
        _update_states(changed_states)
    authors = {
        (existing[record].pk, revision.author_id)
        for record, written in by_record.items()
        for revision in written
    }
    ReviewStateAuthor.objects.bulk_create(
        [ReviewStateAuthor(state_id=state, author_id=author) for state, author in authors],
        ignore_conflicts=True,
        batch_size=1000,
    )
    _address_comments(by_record, read["comments"])


def records_q(records: Iterable[tuple[str, str]]) -> Q:
    """A filter for these records (``(kind, key)`` pairs): one ``IN`` list per kind."""
    keys: dict[str, list[str]] = {}
    for kind, key in records:
        keys.setdefault(kind, []).append(key)
    condition = Q(pk__in=[])
    for kind, names in keys.items():
        condition |= Q(record_kind=kind, record_key__in=names)
    return condition


def _read_back_ids(states: list[ReviewState]) -> None:
    by_record = {(state.record_kind, state.record_key): state for state in states}
    condition = records_q(by_record)
    for pk, kind, key in ReviewState.objects.filter(condition).values_list(
        "pk", "record_kind", "record_key"
    ):
        by_record[(kind, key)].pk = pk


_STATE_FIELDS = ("latest_number", "waiting_from", "waiting_since", "waiting_count", "material")


def _update_states(states: list[ReviewState]) -> None:
    """``bulk_update(states, _STATE_FIELDS)``. On PostgreSQL one statement of a fixed text,
    each column's new values one array: Django's puts a ``CASE`` per column together for
    every call, which cost one case update more than the rest of its review-state upkeep,
    under the ledger lock. Elsewhere Django's."""
    if connection.vendor != "postgresql":
        ReviewState.objects.bulk_update(states, _STATE_FIELDS, batch_size=1000)
        return
    with connection.cursor() as cursor:
        cursor.execute(
            _state_update_sql(),
            [[state.pk for state in states]]
            + [[getattr(state, name) for state in states] for name in _STATE_FIELDS],
        )


@functools.cache
def _state_update_sql() -> str:
    quote = connection.ops.quote_name
    # the columns' own types: the arrays' elements are cast to them
    fields: list[Any] = [ReviewState._meta.pk, *map(ReviewState._meta.get_field, _STATE_FIELDS)]
    columns = [quote(column(ReviewState, name)) for name in _STATE_FIELDS]
    assignments = ", ".join(f"{name} = v.{name}" for name in columns)
    arrays = ", ".join(f"%s::{field.db_type(connection)}[]" for field in fields)
    pk = quote(ReviewState._meta.pk.column)
    return (
        f"UPDATE {quote(ReviewState._meta.db_table)} AS s SET {assignments} "
        f"FROM unnest({arrays}) AS v({pk}, {', '.join(columns)}) WHERE s.{pk} = v.{pk}"
    )


def _open_comments(by_record: dict[tuple[str, str], list[Revision]]) -> QuerySet[ReviewComment]:
    return ReviewComment.objects.filter(
        records_q(by_record), addressed_in=None, resolved_at=None
    ).only("pk", "record_kind", "record_key", "revision_number", "path")


def _address_comments(
    by_record: dict[tuple[str, str], list[Revision]], open_comments: list[ReviewComment]
) -> None:
    """Mark the open comments a new revision answers: one that changed the commented path,
    something inside it or something around it (``addresses``)."""
    answered: list[ReviewComment] = []
    for comment in open_comments:
        for revision in by_record[(comment.record_kind, comment.record_key)]:
            if revision.number > comment.revision_number and addresses(
                revision.changed, comment.path
            ):
                comment.addressed_in = revision.number
                answered.append(comment)
                break
    if answered:
        ReviewComment.objects.bulk_update(answered, ["addressed_in"])


def _bare(path: str) -> str:
    return path.removesuffix(":order")


def _within(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith((outer + ".", outer + "["))


def addresses(changed: Iterable[str], path: str) -> bool:
    """Whether a revision that changed the fields ``changed`` (``Revision.changed``, as
    ``records.changed_fields`` writes them) answers a comment at ``path``.

    A comment at a field is answered by a change of that field, of something inside it
    (a comment on a claim, by an edit of its statement) or of what holds it (a comment on
    a claim's statement, by the claim's removal; ``changed`` names an evidence list as a
    whole, so a comment on one locator is answered by any change of that claim's evidence).
    A comment on the whole record (empty path) is not answered by an edit: the reviewer,
    or an approval of a later revision, resolves it."""
    if not path:
        return False
    path = _bare(path)
    return any(_within(_bare(field), path) or _within(path, _bare(field)) for field in changed)


# --- on approval --------------------------------------------------------------------------


def records_approved(approvals: Sequence[Approval]) -> None:
    """Approvals were written (in this transaction, under the ledger lock): bring their
    records' review state up to date. A record whose latest revision was approved waits for
    nothing; one approved at an earlier revision waits from the revision after it, with the
    authors and materiality of the revisions since. Open comments made on an approved
    revision or before are resolved by the approval: the reviewer accepted the record as
    it stands. A fixed number of queries per batch (a few more per record approved at an
    earlier revision than its latest, which only a restore of old approvals does; a record
    without a state costs none more)."""
    if not approvals:
        return
    latest: dict[tuple[str, str], Approval] = {}
    for approval in approvals:
        record = (approval.record_kind, approval.record_key)
        if record not in latest or latest[record].revision_number < approval.revision_number:
            latest[record] = approval
    condition = records_q(latest)
    states = {
        (state.record_kind, state.record_key): state
        for state in ReviewState.objects.select_for_update().filter(condition)
    }
    # records without a state (written before the review queue kept one, or restored from
    # a backup): approved at their latest revision, a new state waits for nothing
    missing = [record for record in latest if record not in states]
    newest = _latest_numbers(missing) if missing else {}
    fresh: list[ReviewState] = []
    cleared: list[ReviewState] = []
    for record, approval in latest.items():
        state = states.get(record)
        number = approval.revision_number
        if state is None and newest.get(record) == number:
            fresh.append(
                ReviewState(
                    record_kind=record[0],
                    record_key=record[1],
                    latest_number=number,
                    approved_number=number,
                )
            )
            continue
        if state is None or state.latest_number > number:
            _recompute(record, number)
            continue
        if state.approved_number is not None and state.approved_number >= number:
            continue
        state.approved_number = number
        state.latest_number = number
        state.waiting_from = state.waiting_since = None
        state.waiting_count = 0
        state.material = False
        cleared.append(state)
    if fresh:
        ReviewState.objects.bulk_create(fresh, batch_size=1000)
    if cleared:
        ReviewState.objects.bulk_update(
            cleared,
            [
                "approved_number",
                "latest_number",
                "waiting_from",
                "waiting_since",
                "waiting_count",
                "material",
            ],
            batch_size=1000,
        )
        ReviewStateAuthor.objects.filter(state__in=[state.pk for state in cleared]).delete()
    answered = [
        pk
        for pk, kind, key, number in ReviewComment.objects.filter(
            condition, addressed_in=None, resolved_at=None
        ).values_list("pk", "record_kind", "record_key", "revision_number")
        if number <= latest[(kind, key)].revision_number
    ]
    if answered:
        reviewer = next(iter(latest.values())).reviewer_id
        ReviewComment.objects.filter(pk__in=answered).update(
            resolved_at=timezone.now(), resolved_by_id=reviewer
        )


def _latest_numbers(records: list[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """Each record's latest revision number, in one query."""
    return {
        (kind, key): number
        for kind, key, number in Revision.objects.filter(records_q(records))
        .order_by()
        .values("record_kind", "record_key")
        .annotate(last=Max("number"))
        .values_list("record_kind", "record_key", "last")
    }


def _recompute(record: tuple[str, str], approved: int) -> None:
    """A record's state from the ledger, approved at revision ``approved``."""
    kind, key = record
    after = Revision.objects.filter(record_kind=kind, record_key=key, number__gt=approved)
    first = after.order_by("number").values("number", "created_at").first()
    last = after.order_by("-number").values_list("number", flat=True).first()
    state, _ = ReviewState.objects.get_or_create(
        record_kind=kind, record_key=key, defaults={"latest_number": last or approved}
    )
    state.latest_number = last or approved
    state.approved_number = approved
    state.waiting_from = first["number"] if first else None
    state.waiting_since = first["created_at"] if first else None
    state.waiting_count = after.count()
    state.material = first is not None and after.filter(material=True).exists()
    state.save()
    ReviewStateAuthor.objects.filter(state=state).delete()
    ReviewStateAuthor.objects.bulk_create(
        [
            ReviewStateAuthor(state=state, author_id=author)
            for author in set(after.values_list("author_id", flat=True))
        ]
    )


# --- requesting changes -----------------------------------------------------------------


@dataclass(frozen=True)
class CommentInput:
    """One requested change: where (a path of the record, empty for the whole record) and
    what."""

    path: str
    text: str


_SEGMENT = re.compile(r"([A-Za-z_]+)(?:\[([^\]]+)\])?")


def resolve_path(document: dict[str, Any], path: str) -> bool:
    """Whether ``path`` names something in ``document``: fields by name, items of a list by
    position (``controls[0]``) or, in the lists whose items have an identity, by it
    (``claims[CLM-CP22-004-C].statement``, ``relations[CP22-002]``), tags by value."""
    if not path:
        return True
    value: Any = document
    for segment in _bare(path).split("."):
        match = _SEGMENT.fullmatch(segment)
        if match is None or not isinstance(value, dict) or match.group(1) not in value:
            return False
        name, index = match.groups()
        value = value[name]
        if index is None:
            continue
        if not isinstance(value, list):
            return False
        identity = KEYED_LISTS.get(name)
        if identity is not None:
            found = [
                item for item in value if isinstance(item, dict) and item.get(identity) == index
            ]
            if not found:
                return False
            value = found[0]
        elif index.isdigit() and int(index) < len(value):
            value = value[int(index)]
        elif index in value:
            value = index
        else:
            return False
    return True


def _check_comments(
    comments: Sequence[CommentInput], document: dict[str, Any], changed_paths: Iterable[str]
) -> None:
    known = set(changed_paths)
    violations = []
    if not comments:
        violations.append(
            RuleViolation(ReviewCode.COMMENT_MISSING, "say what should change", "comments")
        )
    if len(comments) > COMMENTS_PER_REQUEST:
        violations.append(
            RuleViolation(
                ReviewCode.COMMENT_MISSING,
                f"at most {COMMENTS_PER_REQUEST} comments at a time",
                "comments",
            )
        )
    for index, comment in enumerate(comments):
        where = f"comments[{index}]"
        if not comment.text.strip():
            violations.append(
                RuleViolation(ReviewCode.COMMENT_MISSING, "the comment is empty", f"{where}.text")
            )
        elif len(comment.text) > COMMENT_MAX_LENGTH:
            violations.append(
                RuleViolation(
                    ReviewCode.COMMENT_MISSING,
                    f"a comment holds at most {COMMENT_MAX_LENGTH} characters",
                    f"{where}.text",
                )
            )
        if comment.path not in known and not resolve_path(document, comment.path):
            violations.append(
                RuleViolation(
                    ReviewCode.PATH_UNKNOWN,
                    f"{comment.path!r} names nothing in this revision of the record "
                    "(a field, claims[CLM-…].statement, or empty for the whole record)",
                    f"{where}.path",
                )
            )
    if violations:
        raise RuleViolations(violations)


@transaction.atomic
def request_changes(
    *,
    user: User,
    record_kind: str,
    record_key: str,
    revision_number: int,
    comments: Sequence[CommentInput],
    changed_paths: Iterable[str] = (),
) -> list[ReviewComment]:
    """Ask for changes to a record at revision ``revision_number``, which must be its latest
    (``StaleRevision`` otherwise: nothing is written). Reviewers only. ``changed_paths`` are
    the paths of the diff the reviewer read: a path there may name something the revision
    removed. The comments go to the authors of the revisions waiting for review (their
    feed) and, after commit, by e-mail to those who have an address."""
    require_role(user, "reviewer", "requesting changes")
    from claimsdb.services.ledger import lock_head

    lock_head()  # the record's latest revision cannot move until this commits
    revision = (
        Revision.objects.filter(record_kind=record_kind, record_key=record_key)
        .order_by("-number")
        .only("number", "snapshot")
        .first()
    )
    label = f"{record_kind} {record_key}"
    if revision is None:
        raise RecordNotFound(record_kind, record_key)
    if revision.number != revision_number:
        raise StaleRevision(record=label, expected=revision_number, current=revision.number)
    _check_comments(comments, canonical.loads(revision.snapshot), changed_paths)
    state = ReviewState.objects.filter(record_kind=record_kind, record_key=record_key).first()
    # the authors of the waiting revisions: those the reviewer read
    recipients = list(
        User.objects.filter(
            pk__in=ReviewStateAuthor.objects.filter(state=state).values("author_id")
        ).exclude(pk=user.pk)
        if state is not None
        else []
    )
    now = timezone.now()
    written = ReviewComment.objects.bulk_create(
        [
            ReviewComment(
                record_kind=record_kind,
                record_key=record_key,
                revision_number=revision_number,
                path=_bare(comment.path.strip()),
                text=comment.text.strip(),
                author=user,
                created_at=now,
            )
            for comment in comments
        ]
    )
    if any(comment.pk is None for comment in written):
        written = list(
            ReviewComment.objects.filter(
                record_kind=record_kind, record_key=record_key, created_at=now, author=user
            )
        )
    ReviewCommentRecipient.objects.bulk_create(
        [
            ReviewCommentRecipient(comment_id=comment.pk, user_id=recipient.pk)
            for comment in written
            for recipient in recipients
        ]
    )
    addresses_ = [recipient.email for recipient in recipients if recipient.email]
    if addresses_:
        transaction.on_commit(
            lambda: _mail_requested_changes(user, label, revision_number, written, addresses_)
        )
    return written


def _mail_requested_changes(
    reviewer: User, label: str, number: int, comments: list[ReviewComment], to: list[str]
) -> None:
    lines = [f"{reviewer.get_username()} asks for changes to {label} (revision {number}):", ""]
    for comment in comments:
        lines.append(f"* {comment.path or 'the whole record'}: {comment.text}")
    try:
        send_mail(
            f"[claimsdb] changes requested to {label}",
            "\n".join(lines),
            settings.DEFAULT_FROM_EMAIL,
            to,
        )
    except OSError:  # the mail server is away: the comments are written and in the feed
        logger.exception("could not send the requested changes to %s", ", ".join(to))


@transaction.atomic
def comment_resolve(*, user: User, comment_id: int) -> ReviewComment:
    """A reviewer closes a comment (answered in another way, or no longer wanted)."""
    require_role(user, "reviewer", "resolving a review comment")
    comment = ReviewComment.objects.select_for_update().get(pk=comment_id)
    if comment.resolved_at is None:
        comment.resolved_at = timezone.now()
        comment.resolved_by = user
        comment.save(update_fields=["resolved_at", "resolved_by"])
    return comment
