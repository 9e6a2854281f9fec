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


def case_scope(key: str) -> dict[str, Any]:
    """What bounds a case, for the record page's Scope section.

    ``rules``: active non-attribution rules naming this case (with the figure described:
    "the 155 production responses of CP22-002 must not be attributed to this case") and
    rules protecting this case's own figures from other cases; ``relations``: the case's
    relations to other cases as its document lists them, plus directed relations pointing
    at it from elsewhere (``incoming``).
    """
    from claimsdb.models import Figure, Relation, ScopeRule

    rules = list(ScopeRule.objects.filter(status="active").filter(case=key).order_by("key"))
    own_figures = dict(
        Figure.objects.filter(case__key=key).values_list("figure_id", "case__key")
    )
    protecting = list(
        ScopeRule.objects.filter(status="active", figure__in=list(own_figures)).order_by("key")
    )
    figures = {
        f.figure_id: f
        for f in Figure.objects.select_related("case").filter(
            figure_id__in={r.figure for r in rules + protecting}
        )
    }

    def describe(rule):
        figure = figures.get(rule.figure)
        return {
            "key": rule.key,
            "figure": rule.figure,
            "figure_value": figure.value if figure else None,
            "figure_unit": figure.unit if figure else "",
            "figure_scope": figure.scope if figure else "",
            "figure_case": figure.case.key if figure else "",
            "case": rule.case,
            "reason": rule.reason,
        }

    document = case_document_or_none(key) or {"relations": []}
    incoming = [
        {"case": r.case.key, "kind": r.kind, "note": r.note}
        for r in Relation.objects.select_related("case")
        .filter(other__key=key)
        .exclude(kind__in=["same_event", "related_distinct"])
        .order_by("case__key", "kind")
    ]
    return {
        "forbidden_here": [describe(r) for r in rules],
        "protecting_own": [describe(r) for r in protecting],
        "relations": document["relations"],
        "incoming": incoming,
    }
