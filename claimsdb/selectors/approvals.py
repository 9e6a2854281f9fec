"""Reads of approvals (docs/review.md): a record's latest approved revision, what waits for
review since it, and the diff a reviewer approves."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from claimsdb.models import Approval, Revision
from claimsdb.records import Change, canonical, diff


def latest_approval(kind: str, key: str) -> Approval | None:
    """The record's latest approval (with its reviewer), or None: one index step."""
    return (
        Approval.objects.filter(record_kind=kind, record_key=key)
        .select_related("reviewer")
        .order_by("-revision_number")
        .first()
    )


def latest_approved_revision_number(kind: str, key: str) -> int | None:
    """The number of the record's latest approved revision, or None if none is approved."""
    return (
        Approval.objects.filter(record_kind=kind, record_key=key)
        .order_by("-revision_number")
        .values_list("revision_number", flat=True)
        .first()
    )


def revisions_since_approved(
    kind: str, key: str, approved: int | None = None
) -> QuerySet[Revision]:
    """The record's revisions after its latest approved one (``approved``, read unless
    given), oldest first, with their authors and without snapshots: what an approval of
    its latest revision covers."""
    if approved is None:
        approved = latest_approved_revision_number(kind, key)
    return (
        Revision.objects.filter(record_kind=kind, record_key=key, number__gt=approved or 0)
        .select_related("author")
        .defer("snapshot")
        .order_by("number")
    )


def record_approvals(kind: str, key: str) -> QuerySet[Approval]:
    """A record's approvals, newest first, with their reviewers."""
    return (
        Approval.objects.filter(record_kind=kind, record_key=key)
        .select_related("reviewer")
        .order_by("-revision_number")
    )


def approvals_of_revisions(revision_ids: Iterable[int]) -> dict[int, Approval]:
    """The approval of each of these revisions that has one, by revision id (with its
    reviewer): the history pages show who reviewed a revision. One query, even for no
    revisions (an empty page of a feed costs what any other page does)."""
    ids = list(revision_ids) or [0]  # no revision has id 0
    return {
        approval.revision_id: approval
        for approval in Approval.objects.filter(revision_id__in=ids).select_related("reviewer")
    }


def approvals_of_numbers(kind: str, key: str, numbers: Iterable[int]) -> dict[int, Approval]:
    """The approvals of these revisions of one record, by revision number (with their
    reviewers): the history lines say who reviewed each. One query, along the approvals'
    record index, even for no numbers."""
    wanted = list(numbers) or [0]
    return {
        approval.revision_number: approval
        for approval in Approval.objects.filter(
            record_kind=kind, record_key=key, revision_number__in=wanted
        ).select_related("reviewer")
    }


def review_label(approval: Approval) -> str:
    """How a history line names an approval: "self-approved by …" when four eyes was off
    and the reviewer approved their own change, else "reviewed by …"."""
    how = "self-approved" if approval.self_approved else "reviewed"
    return f"{how} by {approval.reviewer.get_username()}"


def covering_approvals(kind: str, key: str, numbers: Iterable[int]) -> dict[int, Approval]:
    """For each of the record's revision ``numbers``, the approval that covers it (the first
    approval at or after it), if any. One query."""
    approvals = list(record_approvals(kind, key).order_by("revision_number"))
    found: dict[int, Approval] = {}
    for number in numbers:
        for approval in approvals:
            if approval.revision_number >= number:
                found[number] = approval
                break
    return found


@dataclass
class ReviewRange:
    """What approving a record's latest revision covers: the revisions since its latest
    approved one, who wrote them, whether any is material, and the field-by-field diff
    from the approved document to the latest."""

    kind: str
    key: str
    approved: int | None  # the latest approved revision (None: none yet)
    latest: int | None  # the latest revision (None: the record has none)
    revisions: list[Revision] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    @property
    def pending(self) -> bool:
        return self.latest is not None and (self.approved is None or self.approved < self.latest)

    @property
    def count(self) -> int:
        return len(self.revisions)

    @property
    def authors(self) -> list[str]:
        """The usernames of the revisions' authors, each once, in order of first change."""
        return list(dict.fromkeys(revision.author.username for revision in self.revisions))

    @property
    def material(self) -> bool:
        return any(revision.material for revision in self.revisions)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "approved_revision": self.approved,
            "latest_revision": self.latest,
            "revisions": [revision.number for revision in self.revisions],
            "authors": self.authors,
            "material": self.material,
            "changes": [change.as_dict() for change in self.changes],
        }


def review_range(kind: str, key: str) -> ReviewRange:
    """``ReviewRange`` of a record: four queries (the approval, the range, two snapshots)."""
    approved = latest_approved_revision_number(kind, key)
    revisions = list(revisions_since_approved(kind, key, approved))
    latest = revisions[-1].number if revisions else approved
    result = ReviewRange(kind, key, approved, latest, revisions)
    if latest is not None and revisions:
        snapshots = dict(
            Revision.objects.filter(
                record_kind=kind,
                record_key=key,
                number__in=[n for n in (approved, latest) if n is not None],
            ).values_list("number", "snapshot")
        )
        old = canonical.loads(snapshots[approved]) if approved is not None else None
        result.changes = diff(old, canonical.loads(snapshots[latest]))
    return result
