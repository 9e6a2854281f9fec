"""One way to page every list of the site (docs/pagination.md).

``paginate(request, items, noun=…)`` cuts a queryset, a list, or any sequence with
``count()``/``len()`` and slicing into Django ``Paginator`` pages and returns what
``templates/includes/pagination.html`` shows: "120 cases · page 2 of 3" and first, previous,
next and last links that keep the request's other query parameters (its filters).

``?page=`` is read as ``Paginator.get_page`` reads it: a number past either end (``0``,
``-1``, ``999``) shows the last page, and anything that is not a whole number the first. A
list never answers 404 for its page number: a link kept from a longer list still lands on
its end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest

from claimsdb.records.batched import RawRows, fetch_together
from claimsdb.selectors.pages import page_keys, rows_in_order

PAGE_SIZE = 50
PAGE_PARAMETER = "page"


@dataclass(frozen=True)
class ListPage:
    """One page of a list, with what the pagination include shows."""

    page: Page
    items: list[Any]
    count: int
    noun: str  # "case", or "cases" when ``count`` is not one
    first_url: str
    previous_url: str
    next_url: str
    last_url: str

    @property
    def number(self) -> int:
        return self.page.number

    @property
    def num_pages(self) -> int:
        return self.page.paginator.num_pages


def page_url(request: HttpRequest, number: int, parameter: str = PAGE_PARAMETER) -> str:
    """The current URL's query string with ``parameter`` set to ``number`` (left out for
    page 1, so that the first page has one address)."""
    query = request.GET.copy()
    query.pop(parameter, None)
    if number > 1:
        query[parameter] = str(number)
    encoded = query.urlencode()
    return f"?{encoded}" if encoded else request.path


def paginate(
    request: HttpRequest,
    items: Any,
    *,
    noun: str,
    plural: str | None = None,
    per_page: int | None = None,
    parameter: str = PAGE_PARAMETER,
    load: Callable[[list[Any]], list[Any]] | None = None,
) -> ListPage:
    """The page of ``items`` the request asks for (``?page=``), in the order given.

    ``items`` must already be in a stable order (a unique key last). One count and one
    slice: two queries for a queryset, whatever its length. ``per_page``: ``PAGE_SIZE``.
    ``load`` turns the page's items into the rows shown (see ``paginate_rows``).
    """
    page = Paginator(items, per_page or PAGE_SIZE).get_page(request.GET.get(parameter))
    shown = list(page.object_list)
    count = page.paginator.count
    last = page.paginator.num_pages
    return ListPage(
        page=page,
        items=load(shown) if load else shown,
        count=count,
        noun=noun if count == 1 else (plural or f"{noun}s"),
        first_url=page_url(request, 1, parameter) if page.number > 1 else "",
        previous_url=page_url(request, page.number - 1, parameter) if page.has_previous() else "",
        next_url=page_url(request, page.number + 1, parameter) if page.has_next() else "",
        last_url=page_url(request, last, parameter) if page.number < last else "",
    )


def paginate_together(
    request: HttpRequest,
    items: QuerySet[Any],
    together: Mapping[str, QuerySet[Any] | RawRows],
    *,
    noun: str,
    load: Callable[[list[Any]], list[Any]] | None = None,
    per_page: int | None = None,
    parameter: str = PAGE_PARAMETER,
) -> tuple[ListPage, dict[str, list[Any]]]:
    """``paginate`` for a queryset, its count and the page asked for read in one round of
    queries with ``together`` (independent queries the page also needs), sent together
    (``records.batched.fetch_together``: on PostgreSQL one round trip); and the results of
    ``together``. A page number out of range costs one query more (the last page's)."""
    per_page = per_page or PAGE_SIZE
    try:
        guess = max(1, int(request.GET.get(parameter) or 1))
    except ValueError:
        guess = 1
    start = (guess - 1) * per_page
    counted = items.order_by().values("pk").query.get_compiler(items.db)
    sql, params = counted.as_sql()
    found = fetch_together(
        {
            **together,
            "pagination:count": RawRows(items.db, f"SELECT count(*) FROM ({sql}) counted", params),
            "pagination:page": items[start : start + per_page],
        }
    )
    known = _Known(items, found.pop("pagination:count")[0][0], start, found.pop("pagination:page"))
    return paginate(
        request, known, noun=noun, load=load, per_page=per_page, parameter=parameter
    ), found


class _Known:
    """A queryset whose count and one slice were read already: a paginator asks for them
    without a query (any other slice is one)."""

    def __init__(self, items: QuerySet[Any], count: int, start: int, rows: list[Any]):
        self.items, self.total, self.start, self.rows = items, count, start, rows

    def count(self) -> int:
        return self.total

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, index: slice) -> list[Any]:
        stop = self.total if index.stop is None else index.stop
        if index.start == self.start and index.step is None and stop - self.start <= len(self.rows):
            return self.rows[: stop - self.start]
        return list(self.items[index])


def paginate_rows(request: HttpRequest, queryset: QuerySet[Any], **options: Any) -> ListPage:
    """``paginate`` for rows with costly columns: the page is cut on primary keys, then only
    its rows are read (``selectors.pages.page_keys``). One query more, as fixed."""
    return paginate(
        request,
        page_keys(queryset),
        load=lambda keys: rows_in_order(queryset, keys),
        **options,
    )
