"""Reads used by views, the API and commands, with flat query counts."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from claimsdb.models import Case, Revision
from claimsdb.records import case_document, case_queryset


def case_list() -> QuerySet[Case]:
    return Case.objects.order_by("key")


def case_document_or_none(key: str) -> dict[str, Any] | None:
    case = case_queryset().filter(key=key).first()
    return case_document(case) if case else None


def latest_revision_number(record_kind: str, record_key: str) -> int | None:
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
