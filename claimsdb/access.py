"""Who may read what: the one access policy of the site and the API (docs/releases.md).

Two views of the knowledge base:

* **the working state** — signed-in users with a role (viewer and above) read every
  record as it now is, drafts included, and every revision (``may_read_working_state``);
* **the released record** — everyone else (anonymous visitors, signed-in users without a
  role) reads, for each record, only the snapshot of the revision the latest release that
  has an entry for it points at, and only the revisions some release published. Records
  never released, claims not in the released document, unreleased revisions and the
  working state do not exist for them.

This module is the only place that decides it; the released record is read through
``claimsdb.public``, so the pages and the API show the public the same thing. What a
release holds is decided by ``services/releases.py``: a record the public sees names
nothing it does not see (a scope rule, or a case's new revision, naming a case never
released waits for that case),
so every public read that follows the latest release's entries reveals nothing of the work
in progress. The others only adapt these answers: ``web/access.py`` to pages (a 404 for
what a request may not see, sign-in and 403 for editing pages), ``api/visibility.py`` to
the API's answers (the documents of a page of a list, the fast path of a case's GET) and
``api/permissions.py`` to its early refusals of writes.

A user's role is read once per request: with the signed-in user, when it came from a
session (``signin.ThrottledModelBackend.get_user`` reads its rank and
``permissions.loaded_role`` answers from it), and kept on the user object, which Django and
DRF load once per request. It decides what to show and refuses early; the services look
the role up again inside every writing transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as Account
from django.db.models import Exists, OuterRef, QuerySet, Subquery

from claimsdb import public
from claimsdb.models import (
    Approval,
    Claim,
    ClaimIdReservation,
    Release,
    ReleaseEntry,
    ReviewState,
    Revision,
)
from claimsdb.records import canonical, record_document
from claimsdb.records.kinds import record_kinds
from claimsdb.selectors import review
from claimsdb.selectors.revisions import latest_revision_number, record_revision
from claimsdb.services.permissions import RANK, loaded_role

User = Account | AnonymousUser | None
# Where a user object keeps its role for the rest of the request (``role``).
_ROLE = "_claimsdb_role"


# --- roles -------------------------------------------------------------------------------


def role(user: User) -> str | None:
    """The user's highest role, read once per request and kept on the user object."""
    if user is None:
        return None
    try:
        return getattr(user, _ROLE)
    except AttributeError:
        held = loaded_role(user)
        setattr(user, _ROLE, held)
        return held


def holds_role(user: User, wanted: str) -> bool:
    held = role(user)
    return held is not None and RANK[held] >= RANK[wanted]


def may_read_working_state(user: User) -> bool:
    """Signed-in users with a role (viewer and up) read the working state; everyone else
    reads the released record."""
    return holds_role(user, "viewer")


def may_approve(user: User) -> bool:
    """Reviewers approve revisions (docs/review.md); analysts and viewers never do. Whether
    a given range may be approved (four eyes) is the service's to say:
    ``services.approvals.approve`` refuses ``approval.own_change``."""
    return holds_role(user, "reviewer")


# --- webhooks ----------------------------------------------------------------------------


def may_manage_webhooks(user: User) -> bool:
    """Reviewers list, make, change, pause and delete webhook subscriptions and redeliver
    their deliveries (which report the working state, drafts included)."""
    return holds_role(user, "reviewer")


def may_read_webhook_secret(user: User, owner_id: int) -> bool:
    """A subscription's signing secret is read (and rotated) by the reviewer who made it
    only: the others see that it exists, not what it is."""
    return may_manage_webhooks(user) and getattr(user, "pk", None) == owner_id


# --- one record ---------------------------------------------------------------------------


@dataclass(frozen=True)
class VisibleDocument:
    """A record's document as one user may see it, and the revision it is (its ETag).

    Unpacks as ``(document, revision)``."""

    kind: str
    key: str
    document: dict[str, Any]
    revision: int | None
    released: bool  # the released snapshot (else the live document of the working state)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.document, self.revision))


def visible_revision_number(user: User, kind: str, key: str) -> int | None:
    """The revision of the record this user sees (its ETag), or None if they see none:
    the latest for readers of the working state, the released one for everyone else."""
    if may_read_working_state(user):
        return latest_revision_number(kind, key)
    released = public.released_revision(kind, key)
    return released.number if released else None


def visible_document(
    user: User, kind: str, key: str, revision: int | None = None
) -> VisibleDocument | None:
    """The document of one record as this user sees it, or None.

    For the working state the revision (``visible_revision_number``, unless given) is read
    before the document: if a write lands in between, the ETag is older than the document
    and a write based on it is refused as stale, never merged. The released document is
    read with its revision in one go (``revision`` is then only a hint and not used).
    """
    if not may_read_working_state(user):
        released = public.released_revision(kind, key)
        if released is None:
            return None
        document = canonical.loads(released.snapshot)
        return VisibleDocument(kind, key, document, released.number, released=True)
    if revision is None:
        revision = latest_revision_number(kind, key)
    document = record_document(kind, key)
    if document is None:
        return None
    return VisibleDocument(kind, key, document, revision, released=False)


@dataclass(frozen=True)
class VisibleClaim:
    """A claim as one user sees it: its case's document, its place there and itself."""

    case: VisibleDocument
    index: int
    claim: dict[str, Any]


def visible_claim(user: User, claim_id: str) -> VisibleClaim | None:
    """A claim by its permanent ID (withdrawn ones included), or None.

    The released view looks the claim up in its case's released document only: a claim
    added since, or one of a case never released, does not exist there. (Its case is found
    through the claim-ID reservations, which outlive claims removed from the working state.)
    """
    if may_read_working_state(user):
        case_key = (
            Claim.objects.filter(claim_id=claim_id).values_list("case__key", flat=True).first()
        )
    else:
        case_key = (
            ClaimIdReservation.objects.filter(claim_id=claim_id)
            .values_list("case_key", flat=True)
            .first()
        )
    if case_key is None:
        return None
    case = visible_document(user, "case", case_key)
    if case is None:
        return None
    for index, claim in enumerate(case.document["claims"]):
        if claim["id"] == claim_id:
            return VisibleClaim(case, index, claim)
    return None


# --- revisions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class VisibleRevision:
    """A revision of a record as one user may see it."""

    revision: Revision
    release: Release | None  # the first release publishing it; always set when released
    released: bool  # seen as part of the released record (else of the working state)


def visible_revision(user: User, kind: str, key: str, number: int) -> VisibleRevision | None:
    """Revision ``number`` of a record, if this user may see it: any revision in the
    working state, only one a release published (``public.release_of_revision``) otherwise.
    None when they may not, or when ``number`` is not a revision of this record."""
    working = may_read_working_state(user)
    release = public.release_of_revision(kind, key, number)
    if not working and release is None:
        return None
    revision = record_revision(kind, key, number)
    if revision is None:
        return None
    return VisibleRevision(revision, release, released=not working)


def may_see_revision(user: User, kind: str, key: str, number: int) -> bool:
    """Users with a role see every revision; others only those some release published."""
    if may_read_working_state(user):
        return True
    return public.release_of_revision(kind, key, number) is not None


def visible_revisions(user: User) -> QuerySet[Revision]:
    """Ledger entries this user sees, with their authors: every one for readers of the
    working state; for everyone else only those a release entry points at (the revisions
    ``public.is_released_revision`` answers for)."""
    revisions = Revision.objects.select_related("author")
    if may_read_working_state(user):
        return revisions
    return revisions.filter(Exists(ReleaseEntry.objects.filter(revision=OuterRef("pk"))))


def visible_approvals(user: User) -> QuerySet[Approval]:
    """Approvals this user sees, with their reviewers (docs/review.md): every one for
    readers of the working state; for everyone else only the approvals of revisions a
    release published (who reviewed what the public reads, and when)."""
    approvals = Approval.objects.select_related("reviewer")
    if may_read_working_state(user):
        return approvals
    return approvals.filter(Exists(ReleaseEntry.objects.filter(revision=OuterRef("revision"))))


# --- lists --------------------------------------------------------------------------------


def visible_records(user: User, kind: str) -> QuerySet | public.ReleasedRecords:
    """The records of one kind this user sees.

    Readers of the working state get a queryset of the kind's rows (``RecordKind.rows``)
    annotated with ``revision`` (their latest number): a page of them has its documents
    built together (``RecordKind.documents``), in a fixed number of queries however many
    claims, links and revisions they have.

    Everyone else gets the released records (a lazy ``public.ReleasedRecords`` of
    ``VisibleDocument``s, by key, withdrawn ones included: a list shows them only when
    asked); a page of them is one query.
    """
    if not may_read_working_state(user):
        return public.released_records(kind, include_withdrawn=True).wrapped(
            lambda record: VisibleDocument(
                kind, record.key, record.document, record.revision.number, released=True
            )
        )
    latest = (
        Revision.objects.filter(record_kind=kind, record_key=OuterRef("key"))
        .order_by("-number")
        .values("number")[:1]
    )
    return record_kinds.get(kind).rows().annotate(revision=Subquery(latest))


# --- review -------------------------------------------------------------------------------


def may_see_review_queue(user: User) -> bool:
    """Analysts and reviewers open the review queue; viewers have no changes to follow."""
    return holds_role(user, "analyst")


def review_queue(user: User, states: QuerySet[ReviewState]) -> QuerySet[ReviewState]:
    """The waiting records among ``states`` this user sees in the queue: every one for a
    reviewer, those with a change of their own for an analyst, none otherwise."""
    if may_approve(user):
        return states
    if may_see_review_queue(user) and isinstance(user, Account):
        return review.waiting_for(states, user)
    return states.none()


def may_see_review_comments(user: User) -> bool:
    """Review comments belong to the working state: readers of it see them (on record and
    edit pages); the public never does."""
    return may_read_working_state(user)
