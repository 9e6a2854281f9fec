"""Reads of the revision ledger: a record's history, one revision, the latest ones, and
when claims were withdrawn."""

from __future__ import annotations

import json
from typing import Any

from django.db.models import QuerySet

from claimsdb.models import Revision


def latest_revision_number(record_kind: str, record_key: str) -> int | None:
    """The number of the record's latest revision (None if it has none): one index step."""
    return (
        Revision.objects.filter(record_kind=record_kind, record_key=record_key)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )


def record_history(record_kind: str, record_key: str) -> QuerySet[Revision]:
    """A record's revisions, newest first, with their authors."""
    return (
        Revision.objects.filter(record_kind=record_kind, record_key=record_key)
        .select_related("author")
        .order_by("-number")
    )


def record_revisions(
    record_kind: str, record_key: str, *, material_only: bool = False
) -> QuerySet[Revision]:
    """A record's revisions, newest first, without their snapshots."""
    revisions = record_history(record_kind, record_key).defer("snapshot")
    return revisions.filter(material=True) if material_only else revisions


def record_revision(record_kind: str, record_key: str, number: int) -> Revision | None:
    """One revision of one record (with its snapshot), or None."""
    return (
        Revision.objects.select_related("author")
        .filter(record_kind=record_kind, record_key=record_key, number=number)
        .first()
    )


def recent_revisions(limit: int = 20) -> QuerySet[Revision]:
    """The latest revisions across the knowledge base, without snapshots."""
    return Revision.objects.select_related("author").defer("snapshot").order_by("-number")[:limit]


# How many of a case's newest revisions are read to date its claims' withdrawals.
WITHDRAWAL_LOOKBACK = 25


def claim_withdrawals(
    case_key: str, claim_ids: list[str], *, up_to: int | None = None
) -> dict[str, tuple[Any, bool]]:
    """When each of the (withdrawn) claims was withdrawn: ``{claim id: (time, exact)}``.

    The time is that of the oldest revision in the unbroken run of the case's newest
    revisions (up to revision ``up_to``) in which the claim is withdrawn. One query over at
    most ``WITHDRAWAL_LOOKBACK`` revisions: a withdrawal older than those is given as the
    oldest revision read, with ``exact`` False (withdrawn on or before that time).
    """
    if not claim_ids:
        return {}
    revisions = Revision.objects.filter(record_kind="case", record_key=case_key)
    if up_to is not None:
        revisions = revisions.filter(number__lte=up_to)
    rows = list(
        revisions.order_by("-number").values_list("created_at", "snapshot")[:WITHDRAWAL_LOOKBACK]
    )
    open_runs: dict[str, Any] = {}  # claim id → time of the oldest revision of its run so far
    found: dict[str, tuple[Any, bool]] = {}
    pending = set(claim_ids)
    for created_at, snapshot in rows:
        withdrawn = {
            claim["id"]
            for claim in json.loads(snapshot).get("claims", [])
            if claim.get("status") == "withdrawn"
        }
        for claim_id in list(pending):
            if claim_id in withdrawn:
                open_runs[claim_id] = created_at
            else:
                pending.discard(claim_id)
                if claim_id in open_runs:
                    found[claim_id] = (open_runs[claim_id], True)
        if not pending:
            break
    # a run reaching the case's first revision began there; one cut off by the bound did not
    complete = len(rows) < WITHDRAWAL_LOOKBACK
    for claim_id in pending:
        if claim_id in open_runs:
            found[claim_id] = (open_runs[claim_id], complete)
    return found
