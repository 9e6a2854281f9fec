"""Claims one at a time: each change is a whole-case write (one revision of the case)."""

from __future__ import annotations

import copy
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from claimsdb.models import Claim
from claimsdb.records import RecordNotFound, RuleViolation, RuleViolations, record_document

from .ledger import lock_head
from .records import ANY_REVISION, record_update
from .writer import WriteOutcome


def claim_case_key(claim_id: str) -> str:
    key = Claim.objects.filter(claim_id=claim_id).values_list("case__key", flat=True).first()
    if key is None:
        raise RecordNotFound("claim", claim_id)
    return key


def _case_document(case_key: str) -> dict[str, Any]:
    document = record_document("case", case_key)
    if document is None:
        raise RecordNotFound("case", case_key)
    return copy.deepcopy(document)


def _refuse_not_object(claim: Any) -> None:
    if not isinstance(claim, dict):
        raise RuleViolations([RuleViolation("document.type", "a claim must be an object", "")])


def _under_lock(function):
    """Read the case and write it back in one transaction under the ledger lock, so a change
    landing between the read and the write cannot be lost (even without a base revision)."""

    def locked(**kwargs):
        with transaction.atomic():
            lock_head()
            return function(**kwargs)

    locked.__name__ = function.__name__
    locked.__doc__ = function.__doc__
    return locked


@_under_lock
def claim_add(
    *,
    user: AbstractBaseUser,
    case_key: str,
    claim: dict[str, Any],
    summary: str,
    material: bool = True,
    position: int | None = None,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Add a claim to a case (at ``position``, or last)."""
    _refuse_not_object(claim)
    document = _case_document(case_key)
    index = len(document["claims"]) if position is None else max(0, position)
    document["claims"].insert(index, claim)
    return record_update(
        user=user,
        kind="case",
        key=case_key,
        document=document,
        summary=summary,
        material=material,
        expected_revision=expected_revision,
    )


@_under_lock
def claim_update(
    *,
    user: AbstractBaseUser,
    claim_id: str,
    claim: dict[str, Any],
    summary: str,
    material: bool = True,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Replace one claim of its case (its ID stays: a claim's ID never changes)."""
    _refuse_not_object(claim)
    case_key = claim_case_key(claim_id)
    if claim.get("id", claim_id) != claim_id:
        raise RuleViolations(
            [RuleViolation("record.key_mismatch", f"a claim's ID never changes ({claim_id})", "id")]
        )
    document = _case_document(case_key)
    index = next(i for i, c in enumerate(document["claims"]) if c["id"] == claim_id)
    document["claims"][index] = {**claim, "id": claim_id}
    return record_update(
        user=user,
        kind="case",
        key=case_key,
        document=document,
        summary=summary,
        material=material,
        expected_revision=expected_revision,
    )


@_under_lock
def claim_withdraw(
    *,
    user: AbstractBaseUser,
    claim_id: str,
    summary: str,
    reason: str = "",
    material: bool = True,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Withdraw a claim: it stays in the case with status ``withdrawn``; a ``reason`` becomes
    its status note (the record page shows "Withdrawn on <date>: <reason>")."""
    case_key = claim_case_key(claim_id)
    document = _case_document(case_key)
    for claim in document["claims"]:
        if claim["id"] == claim_id:
            claim["status"] = "withdrawn"
            if reason:
                claim["status_note"] = reason
    return record_update(
        user=user,
        kind="case",
        key=case_key,
        document=document,
        summary=summary,
        material=material,
        expected_revision=expected_revision,
    )
