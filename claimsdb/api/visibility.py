"""What a user may read through the API: the one place that decides it (docs/releases.md).

Two views of the knowledge base:

* **the working state** — signed-in users with a role (viewer and above) read every
  record as it now is, drafts included, and every revision (``may_read_working_state``);
* **the released record** — everyone else (anonymous users, signed-in users without a
  role) reads, for each record, only the snapshot of the revision the latest release that
  has an entry for it points at, and only the revisions some release entry points at.
  Records never released, claims not in the released document, unreleased revisions and
  the working state do not exist for them: the views answer 404.

The released view is read through the selectors of ``claimsdb.public`` (the site's public
pages use the same ones), so the API and the pages always show the public the same thing.
The views ask the functions below and never test roles themselves; the permission classes
let anyone read and refuse writes early (the services check the role again).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet, Subquery

from claimsdb import public
from claimsdb.models import (
    AssessmentMethod,
    Case,
    Claim,
    ClaimIdReservation,
    ReleaseEntry,
    Revision,
    ScopeRule,
    Source,
)
from claimsdb.records import (
    case_document,
    case_queryset,
    method_document,
    record_document,
    rule_document,
    source_document,
)
from claimsdb.records.batched import CASE_FIELDS, case_documents
from claimsdb.selectors.revisions import latest_revision_number
from claimsdb.services.permissions import RANK, loaded_role

DOCUMENT_BUILDERS = {
    "case": case_document,  # from a row of case_queryset(), with its prefetches
    "source": source_document,
    "rule": rule_document,
    "method": method_document,
}
MODELS = {"case": Case, "source": Source, "rule": ScopeRule, "method": AssessmentMethod}


@dataclass(frozen=True)
class VisibleDocument:
    """A record's document as one user may see it, and the revision it is (its ETag)."""

    kind: str
    key: str
    document: dict[str, Any]
    revision: int | None


def request_role(user) -> str | None:
    """The user's role, once per request, kept on the user object (read with the user
    when signed in through a session: ``permissions.loaded_role``).

    Only for deciding what to show and for refusing early: the services look the role up
    again inside every writing transaction.
    """
    if user is None:
        return None
    try:
        return user._claimsdb_api_role
    except AttributeError:
        role = loaded_role(user)
        user._claimsdb_api_role = role
        return role


def holds_role(user, role: str) -> bool:
    held = request_role(user)
    return held is not None and RANK[held] >= RANK[role]


def may_read_working_state(user) -> bool:
    """Signed-in users with a role read the working state (drafts included); everyone else
    reads the released record. The same test as ``claimsdb.public.may_read_working_state``,
    with the role looked up once per request."""
    return holds_role(user, "viewer")


def visible_revision(user, kind: str, key: str) -> int | None:
    """The revision of the record this user sees (its ETag), or None if they see none:
    the latest for readers of the working state, the released one for everyone else."""
    if may_read_working_state(user):
        return latest_revision_number(kind, key)
    released = public.released_revision(kind, key)
    return released.number if released else None


def visible_document(
    user, kind: str, key: str, revision: int | None = None
) -> VisibleDocument | None:
    """The document of one record as this user sees it, or None.

    For the working state the revision (``visible_revision``, unless given) is read before
    the document: if a write lands in between, the ETag is older than the document and a
    write based on it is refused as stale, never merged. The released document is read
    with its revision in one go (``revision`` is then only a hint and not used).
    """
    if not may_read_working_state(user):
        released = public.released_revision(kind, key)
        if released is None:
            return None
        return VisibleDocument(kind, key, json.loads(released.snapshot), released.number)
    if revision is None:
        revision = latest_revision_number(kind, key)
    document = record_document(kind, key)
    if document is None:
        return None
    return VisibleDocument(kind, key, document, revision)


def working_case(key: str) -> Case | None:
    """For readers of the working state (the caller checks): a case's own row with its
    latest revision number (``revision``, its ETag) read in the same query, or None.

    Its document is ``working_case_document(row)``: the rows it is built from are read
    after the revision, as ``visible_document`` reads the revision before the document,
    and not at all when ``If-None-Match`` names the revision."""
    latest = (
        Revision.objects.filter(record_kind="case", record_key=OuterRef("key"))
        .order_by("-number")
        .values("number")[:1]
    )
    return (
        Case.objects.only(*CASE_FIELDS).annotate(revision=Subquery(latest)).filter(key=key).first()
    )


def working_case_document(case: Case) -> VisibleDocument:
    """The document of a row of ``working_case``, from plain rows (``case_documents``)."""
    return VisibleDocument("case", case.key, case_documents([case])[0], case.revision)


@dataclass(frozen=True)
class VisibleClaim:
    """A claim as one user sees it: its case's document, its place there and itself."""

    case: VisibleDocument
    index: int
    claim: dict[str, Any]


def visible_claim(user, claim_id: str) -> VisibleClaim | None:
    """A claim by its permanent ID (withdrawn ones included), or None.

    The released view looks the claim up in its case's released document only: a claim
    added since, or one of a case never released, does not exist there. (Its case is found
    through the claim-ID reservations, which outlive claims removed from the working state.)
    """
    if may_read_working_state(user):
        owners = Claim.objects.filter(claim_id=claim_id).values_list("case__key", flat=True)
    else:
        owners = ClaimIdReservation.objects.filter(claim_id=claim_id).values_list(
            "case_key", flat=True
        )
    case_key = owners.first()
    if case_key is None:
        return None
    case = visible_document(user, "case", case_key)
    if case is None:
        return None
    for index, claim in enumerate(case.document["claims"]):
        if claim["id"] == claim_id:
            return VisibleClaim(case, index, claim)
    return None


def document_of(kind: str, record: Any) -> dict[str, Any]:
    """The document of a row of ``visible_records`` (prefetched for cases)."""
    if isinstance(record, VisibleDocument):
        return record.document
    return DOCUMENT_BUILDERS[kind](record)


def visible_records(user, kind: str) -> QuerySet | public.ReleasedRecords:
    """The records of one kind this user sees.

    Readers of the working state get a queryset of rows annotated with ``revision`` (their
    latest number); cases come with every prefetch their documents need, so a page of them
    costs a fixed number of queries however many claims, links and revisions they have.

    Everyone else gets the released records (a lazy ``public.ReleasedRecords`` of
    ``VisibleDocument``s, by key, withdrawn ones included: a list shows them only when
    asked, see ``filters.filter_released``); a page of them is one query.
    """
    if not may_read_working_state(user):
        return public.released_records(kind, include_withdrawn=True).wrapped(
            lambda record: VisibleDocument(
                kind, record.key, record.document, record.revision.number
            )
        )
    model = MODELS[kind]
    queryset = case_queryset() if kind == "case" else model.objects.all()
    latest = (
        Revision.objects.filter(record_kind=kind, record_key=OuterRef("key"))
        .order_by("-number")
        .values("number")[:1]
    )
    return queryset.annotate(revision=Subquery(latest))


def visible_revisions(user) -> QuerySet[Revision]:
    """Ledger entries this user sees, with their authors: every one for readers of the
    working state; for everyone else only those a release entry points at (the revisions
    ``claimsdb.public.is_released_revision`` answers for)."""
    revisions = Revision.objects.select_related("author")
    if may_read_working_state(user):
        return revisions
    return revisions.filter(Exists(ReleaseEntry.objects.filter(revision=OuterRef("pk"))))


def released_method_dimensions() -> set[str]:
    """The dimension keys of the released assessment methods (for the released view's
    filters: a dimension only a draft method has is no filter there)."""
    return {
        dimension.get("key")
        for record in public.released_records("method", include_withdrawn=True)
        for dimension in record.document.get("dimensions") or []
        if isinstance(dimension, dict)
    }
