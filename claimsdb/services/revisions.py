"""Reverting a record to an earlier revision: a new revision, through the same rules."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from claimsdb.models import Revision
from claimsdb.records import RecordNotFound, canonical

from .records import ANY_REVISION, record_change
from .writer import WriteOutcome


def revision_revert(
    *,
    user: User,
    number: int,
    summary: str,
    material: bool = True,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Restore the record of revision ``number`` as it was then, as a new ``revert`` revision.

    Imported reproduction runs are kept as they are now: a revert restores what analysts
    wrote and never drops imported evidence (the record is read as it is now and changed,
    as any change is: ``records.record_change``).
    """
    revision = Revision.objects.filter(number=number).first()
    if revision is None:
        raise RecordNotFound("revision", str(number))
    return record_change(
        user=user,
        kind=revision.record_kind,
        key=revision.record_key,
        change=lambda current: revert_document(revision, current),
        summary=summary,
        material=material,
        expected_revision=expected_revision,
        mode="upsert",
        action="revert",
        role="reviewer",
    )


def revert_document(revision: Revision, current: dict[str, Any] | None) -> dict[str, Any]:
    """The document a revert to ``revision`` writes over ``current`` (the record now).

    Reading only: the revert page shows this to the reviewer before anything is written,
    and ``revision_revert`` writes the very same document.
    """
    document = canonical.loads(revision.snapshot)
    if current is not None and revision.record_kind == "case":
        document["reproduction_runs"] = current["reproduction_runs"]
    return document
