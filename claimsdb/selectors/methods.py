"""Reads of assessment methods."""

from __future__ import annotations

from django.db.models import QuerySet

from claimsdb.models import AssessmentMethod


def method_list() -> QuerySet[AssessmentMethod]:
    return AssessmentMethod.objects.order_by("key")


def methods_by_key(keys: set[str] | list[str]) -> dict[str, AssessmentMethod]:
    return {m.key: m for m in AssessmentMethod.objects.filter(key__in=set(keys))}
