"""Helpers that cut a list into pages with a fixed number of queries (docs/pagination.md)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, IntegerField, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce


def page_keys(queryset: QuerySet[Any]) -> QuerySet[Any]:
    """The primary keys of ``queryset``, in its order, to cut a page on.

    A page of rows with costly columns (correlated counts, the latest revision) is cut on
    their keys first: PostgreSQL works out the selected columns of every row an OFFSET
    skips, so the costly columns are read for the page's rows only (``rows_in_order``)."""
    return queryset.prefetch_related(None).values_list("pk", flat=True)


def rows_in_order(queryset: QuerySet[Any], keys: list[Any]) -> list[Any]:
    """The rows of ``queryset`` with these primary keys, in the order of ``keys``."""
    rows = {row.pk: row for row in queryset.filter(pk__in=list(keys))}
    return [rows[key] for key in keys if key in rows]


def count_of(related: QuerySet[Any], group: str) -> Any:
    """The number of rows of ``related`` (filtered on an ``OuterRef``), as a correlated
    subquery: computed for the rows a page shows, and left out of the page's count query."""
    counted = related.order_by().values(group).annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))
