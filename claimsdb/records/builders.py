"""Source, scope-rule, method and component rows → their canonical documents
(docs/record-format.md).

Each of these records is one row, so its document is built from the row alone. A case's
document gathers rows of ten tables; it is built a batch at a time, from plain rows, in
``records/batched.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from claimsdb.models import AssessmentMethod, Component, ScopeRule, Source


def source_document(source: Source) -> dict[str, Any]:
    return {
        "format": "claimsdb.source/1",
        "key": source.key,
        "title": source.title,
        "kind": source.kind,
        "publisher": source.publisher,
        "url": source.url,
        "published_on": source.published_on.isoformat() if source.published_on else None,
        "accessed_on": source.accessed_on.isoformat() if source.accessed_on else None,
        "reliability": source.reliability,
        "notes": source.notes,
        "status": source.status,
    }


def rule_document(rule: ScopeRule) -> dict[str, Any]:
    return {
        "format": "claimsdb.rule/1",
        "key": rule.key,
        "kind": rule.kind,
        "status": rule.status,
        "figure": rule.figure,
        "case": rule.case,
        "reason": rule.reason,
    }


def method_document(method: AssessmentMethod) -> dict[str, Any]:
    return {
        "format": "claimsdb.method/1",
        "key": method.key,
        "title": method.title,
        "dimensions": method.dimensions,
        "impact": method.impact,
        "status": method.status,
    }


def component_document(component: Component) -> dict[str, Any]:
    return {
        "format": "claimsdb.component/1",
        "key": component.key,
        "name": component.name,
        "kind": component.kind,
        "purl": component.purl,
        "version_scheme": component.version_scheme,
        "homepage": component.homepage,
        "aliases": list(component.aliases),
        "relations": [dict(relation) for relation in component.relations],
        "status": component.status,
    }


def row_by_row(
    build: Callable[[Any], dict[str, Any]],
) -> Callable[[Sequence[Any]], list[dict[str, Any]]]:
    """A batch builder from a builder of one row: the documents of ``rows``, in order."""

    def documents(rows: Sequence[Any]) -> list[dict[str, Any]]:
        return [build(row) for row in rows]

    documents.__name__ = f"{build.__name__}s"
    return documents
