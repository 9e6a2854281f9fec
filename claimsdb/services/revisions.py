"""Reverting a record to an earlier revision: a new revision, through the same rules."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from claimsdb.models import Revision
from claimsdb.records import RecordNotFound, record_document

from .ledger import lock_head
from .records import ANY_REVISION
from .writer import RecordWrite, WriteOutcome, write_records


def revision_revert(
    *,
    user: AbstractBaseUser,
    number: int,
    summary: str,
    material: bool = True,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Restore the record of revision ``number`` as it was then, as a new ``revert`` revision.

    Imported reproduction runs are kept as they are now: a revert restores what analysts
    wrote and never drops imported evidence.
    """
    with transaction.atomic():
        lock_head()  # the runs read below are the ones kept
        return _revert(user, number, summary, material, expected_revision)


def revert_document(revision: Revision, current: dict[str, Any] | None) -> dict[str, Any]:
    """The document a revert to ``revision`` writes over ``current`` (the record now).

    Reading only: the revert page shows this to the reviewer before anything is written,
    and ``revision_revert`` writes the very same document.
    """
    document = json.loads(revision.snapshot)
    if current is not None and revision.record_kind == "case":
        document["reproduction_runs"] = current["reproduction_runs"]
    return document


def _revert(user, number: int, summary: str, material: bool, expected_revision: Any):
    revision = Revision.objects.filter(number=number).first()
    if revision is None:
        raise RecordNotFound("revision", str(number))
    current = record_document(revision.record_kind, revision.record_key)
    document = revert_document(revision, current)
    checked = expected_revision is not ANY_REVISION
    (outcome,) = write_records(
        user=user,
        writes=[
            RecordWrite(
                kind=revision.record_kind,
                document=document,
                mode="upsert",
                action="revert",
                expected_revision=expected_revision if checked else None,
                check_expected=checked,
            )
        ],
        summary=summary,
        material=material,
        role="reviewer",
    )
    return outcome
