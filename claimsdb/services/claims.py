"""Claims one at a time, or several added at once: each change is a whole-case write (one
revision of the case), made to the case as it is by ``record_change`` so that no concurrent
change to the case is lost.

A refusal is a ``ClaimRefused``: its violations point into the case's document, as every
refusal's do, and it knows where the claim stands there, so a caller that sent the claim
alone (the API) can say the same from the claim's side.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User

from claimsdb.codes import DocumentCode, RecordCode
from claimsdb.models import Claim
from claimsdb.records import (
    RecordExists,
    RecordNotFound,
    RuleViolation,
    RuleViolations,
    StaleRevision,
)

from .records import ANY_REVISION, merge_patch, parse_update, record_change
from .writer import WriteOutcome


class ClaimRefused(RuleViolations):
    """A claim change the rules refused; ``index`` is the claim's place in case
    ``case_key``'s claims as the refused document had them."""

    def __init__(self, violations: list[RuleViolation], *, case_key: str, index: int):
        super().__init__(violations)
        self.case_key = case_key
        self.index = index

    def seen_from_the_claim(self) -> list[RuleViolation]:
        """The violations with paths into the claim: ``claims[3].evidence`` becomes
        ``evidence`` when claim 3 is the one written; a problem elsewhere in the case keeps
        its path and names the case as its ``record``."""
        prefix = f"claims[{self.index}]"
        seen = []
        for violation in self.violations:
            path = violation.path
            if violation.record:
                seen.append(violation)
            elif path == prefix:
                seen.append(RuleViolation(violation.code, violation.message, ""))
            elif path.startswith(prefix + "."):
                seen.append(
                    RuleViolation(violation.code, violation.message, path[len(prefix) + 1 :])
                )
            else:
                seen.append(
                    RuleViolation(violation.code, violation.message, path, f"case {self.case_key}")
                )
        return seen


@dataclass
class _Place:
    """Where the claim being written stands in its case, once the case has been read."""

    index: int | None = None


@contextmanager
def _claim_refusals(case_key: str) -> Iterator[_Place]:
    """Turn the rules' refusals of a claim change into a ``ClaimRefused``."""
    place = _Place()
    try:
        yield place
    except (StaleRevision, RecordExists):
        raise
    except RuleViolations as refused:
        if place.index is None:
            raise
        raise ClaimRefused(refused.violations, case_key=case_key, index=place.index) from None


def claim_case_key(claim_id: str) -> str:
    """The key of the case a claim belongs to (a claim never moves to another case)."""
    key = Claim.objects.filter(claim_id=claim_id).values_list("case__key", flat=True).first()
    if key is None:
        raise RecordNotFound("claim", claim_id)
    return key


def _refuse_not_object(claim: Any) -> None:
    if not isinstance(claim, dict):
        raise RuleViolations([RuleViolation(DocumentCode.TYPE, "a claim must be an object", "")])


def _index_of(document: dict[str, Any], claim_id: str) -> int:
    for index, claim in enumerate(document["claims"]):
        if claim["id"] == claim_id:
            return index
    raise RecordNotFound("claim", claim_id)


def _change_claim(
    *,
    user: User,
    claim_id: str,
    change: Callable[[dict[str, Any]], dict[str, Any]],
    summary: str,
    material: bool,
    expected_revision: Any,
) -> WriteOutcome:
    """Write ``change(claim) -> claim`` over one claim of its case, as it is now."""
    case_key = claim_case_key(claim_id)
    with _claim_refusals(case_key) as place:

        def changed_case(document: dict[str, Any]) -> dict[str, Any]:
            place.index = _index_of(document, claim_id)
            claims = document["claims"]
            claims[place.index] = change(claims[place.index])
            return parse_update("case", case_key, document)

        return record_change(
            user=user,
            kind="case",
            key=case_key,
            change=changed_case,
            summary=summary,
            material=material,
            expected_revision=expected_revision,
        )


def claim_add(
    *,
    user: User,
    case_key: str,
    claim: dict[str, Any],
    summary: str,
    material: bool = True,
    position: int | None = None,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Add a claim to a case (at ``position``, or last)."""
    with _claim_refusals(case_key) as place:

        def with_claim(document: dict[str, Any]) -> dict[str, Any]:
            claims = document["claims"]
            place.index = len(claims) if position is None else min(max(0, position), len(claims))
            _refuse_not_object(claim)
            claims.insert(place.index, claim)
            return parse_update("case", case_key, document)

        return record_change(
            user=user,
            kind="case",
            key=case_key,
            change=with_claim,
            summary=summary,
            material=material,
            expected_revision=expected_revision,
        )


def claims_add(
    *,
    user: User,
    case_key: str,
    claims: list[dict[str, Any]],
    summary: str,
    material: bool = True,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Add several claims at the end of a case's claims, as one revision: all are written or
    none. A refusal is a ``ClaimRefused`` whose ``index`` is where the first of them stands
    (the others follow it), so each violation's path says which claim it is about."""
    with _claim_refusals(case_key) as place:

        def with_claims(document: dict[str, Any]) -> dict[str, Any]:
            place.index = len(document["claims"])
            for claim in claims:
                _refuse_not_object(claim)
            document["claims"].extend(claims)
            return parse_update("case", case_key, document)

        return record_change(
            user=user,
            kind="case",
            key=case_key,
            change=with_claims,
            summary=summary,
            material=material,
            expected_revision=expected_revision,
        )


def _replacement(claim_id: str, claim: Any) -> dict[str, Any]:
    """``claim`` as the new version of claim ``claim_id`` (its ID never changes)."""
    _refuse_not_object(claim)
    if claim.get("id", claim_id) != claim_id:
        raise RuleViolations(
            [
                RuleViolation(
                    RecordCode.KEY_MISMATCH, f"a claim's ID never changes ({claim_id})", "id"
                )
            ]
        )
    return {**claim, "id": claim_id}


def claim_update(
    *,
    user: User,
    claim_id: str,
    claim: dict[str, Any],
    summary: str,
    material: bool = True,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Replace one claim of its case (its ID stays: a claim's ID never changes)."""
    return _change_claim(
        user=user,
        claim_id=claim_id,
        change=lambda current: _replacement(claim_id, claim),
        summary=summary,
        material=material,
        expected_revision=expected_revision,
    )


def claim_patch(
    *,
    user: User,
    claim_id: str,
    patch: Any,
    summary: str,
    material: bool = True,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Apply an RFC 7386 JSON merge patch to one claim as it is now (``merge_patch``)."""
    return _change_claim(
        user=user,
        claim_id=claim_id,
        change=lambda current: _replacement(claim_id, merge_patch(current, patch)),
        summary=summary,
        material=material,
        expected_revision=expected_revision,
    )


def claim_withdraw(
    *,
    user: User,
    claim_id: str,
    summary: str,
    reason: str = "",
    material: bool = True,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Withdraw a claim: it stays in the case with status ``withdrawn``; a ``reason`` becomes
    its status note (the record page shows "Withdrawn on <date>: <reason>")."""

    def withdrawn(claim: dict[str, Any]) -> dict[str, Any]:
        claim["status"] = "withdrawn"
        if reason:
            claim["status_note"] = reason
        return claim

    return _change_claim(
        user=user,
        claim_id=claim_id,
        change=withdrawn,
        summary=summary,
        material=material,
        expected_revision=expected_revision,
    )


def claim_move(
    *,
    user: User,
    claim_id: str,
    offset: int,
    summary: str,
    material: bool = True,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Move a claim ``offset`` places in its case's order (negative: towards the first),
    stopping at either end."""
    case_key = claim_case_key(claim_id)
    with _claim_refusals(case_key) as place:

        def moved(document: dict[str, Any]) -> dict[str, Any]:
            claims = document["claims"]
            index = _index_of(document, claim_id)
            place.index = min(max(0, index + offset), len(claims) - 1)
            claims.insert(place.index, claims.pop(index))
            return parse_update("case", case_key, document)

        return record_change(
            user=user,
            kind="case",
            key=case_key,
            change=moved,
            summary=summary,
            material=material,
            expected_revision=expected_revision,
        )
