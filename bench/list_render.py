"""What the case list's rows and the search hits cost to render: templates vs hand-written.

    .venv/bin/python bench/list_render.py                   # SQLite, in memory
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/claimsdb .venv/bin/python bench/list_render.py
    .venv/bin/python bench/list_render.py --repeats 50      # a quick run

The rows and hits render through ``cases/_list_rows.html`` and ``search/_hits.html``. Before
they did, the view built their markup in Python, escaping by hand and resolving the detail
route once for every row; that builder is kept here (``hand_case_rows``,
``hand_search_hits``) as the floor the templates are measured against, and the run checks
that both give the same bytes.

In a throwaway test database (Django's, dropped at the end) it loads ``--cases`` synthetic
cases (``claimsdb.synthetic_kb``) through the services, reads one page of the case list
(``PAGE_SIZE`` rows, as the view reads them) and ``SEARCH_PAGE`` hits (a third of each kind),
then times each path ``--repeats`` times, interleaved, from the rows as the view has them
to their HTML; and, for scale, the whole request for ``GET /cases/`` and a search. It
prints the fastest of the runs (the least disturbed by other work on the machine) and the
ratio template / hand-written.
"""

from __future__ import annotations

import argparse
import functools
import html
import json
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote

from django.urls import get_script_prefix, get_urlconf, reverse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGE_SIZE = 50  # rows of a page of the case list (claimsdb.web.pagination.PAGE_SIZE)
SEARCH_PAGE = 20  # hits on a page of search results (claimsdb.search.PER_PAGE)
WORD = "vLLM"  # in case titles, claim statements and source titles of the synthetic cases


# --- the hand-written path: the view's builder before the templates took over ---------------

_PLAIN_KEY = re.compile(r"[A-Za-z0-9._~-]+")  # keys reverse() puts in a URL as they are
_KEY_MARKER = "0claimsdb0key0"


def _detail_url(name: str, key: str) -> str:
    if not _PLAIN_KEY.fullmatch(key):
        return reverse(name, args=[key])
    before, after = _route_around(name, get_script_prefix(), get_urlconf())
    return f"{before}{key}{after}"


@functools.lru_cache(maxsize=64)
def _route_around(name: str, prefix: str, urlconf: str | None) -> tuple[str, str]:
    before, after = reverse(name, args=[_KEY_MARKER]).split(_KEY_MARKER)
    return before, after


def _text(value: object) -> str:
    if hasattr(value, "__html__"):
        return value.__html__()
    return html.escape(str(value))


def _hand_case_row(row: dict) -> str:
    tags = "".join(
        f' <a class="tag" href="?tag={_text(quote(tag))}">{_text(tag)}</a>' for tag in row["tags"]
    )
    summary = f"<p>{_text(row['summary_shown'])}</p>" if row["summary"] else ""
    url = _text(_detail_url("case-detail", row["key"]))
    return (
        f'    <p class="kicker"><span class="key">{_text(row["key"])}</span> '
        f'<span class="badge status-{_text(row["status"])}">{_text(row["status_label"])}'
        f"</span>{tags}</p>\n"
        f'    <h2><a href="{url}">{_text(row["title"])}</a></h2>\n'
        f"    {summary}\n"
        f'    <p class="meta">{_text(row["meta"])}</p>'
    )


def hand_case_rows(rows: list[dict]) -> str:
    """``cases/_list_rows.html``, built by hand."""
    if not rows:
        return (
            '<ul class="case-list">\n\n  <li class="muted">No case matches these filters.</li>'
            "\n\n</ul>\n"
        )
    items = "".join(f"\n  <li>\n{_hand_case_row(row)}\n  </li>\n" for row in rows)
    return f'<ul class="case-list">\n{items}\n</ul>\n'


def _hand_search_hit(row: dict) -> str:
    hit, e = row["hit"], _text
    status = f' <span class="badge">{e(row["status_label"])}</span>'
    if hit.kind == "case":
        url = e(_detail_url("case-detail", hit.key))
        badge = status if hit.status != "ready" else ""
        markup = (
            f'<li class="hit-case"><span class="kind">case</span> <a href="{url}">'
            f'<span class="key">{e(hit.key)}</span> {e(hit.title)}</a>{badge}'
            f'<p class="muted">{e(hit.text)}</p></li>'
        )
    elif hit.kind == "claim":
        url = e(_detail_url("case-detail", hit.case_key))
        markup = (
            f'<li class="hit-claim"><span class="kind">claim</span> <a href="{url}#{e(hit.key)}">'
            f'<span class="key">{e(hit.key)}</span></a> <span class="badge claim-{e(hit.status)}">'
            f'{e(row["status_label"])}</span> {e(hit.text)} <span class="muted">in '
            f"{e(hit.case_key)}</span></li>"
        )
    else:
        url = e(_detail_url("source-detail", hit.key))
        badge = status if hit.status != "active" else ""
        markup = (
            f'<li class="hit-source"><span class="kind">source</span> <a href="{url}">'
            f'{e(hit.title)}</a> <span class="kind">{e(row["kind_label"])}</span> '
            f'<span class="muted">{e(hit.key)}</span>{badge}</li>'
        )
    if hit.kind != "source":
        markup += "\n    "
    return markup


def hand_search_hits(rows: list[dict], start: int) -> str:
    """``search/_hits.html``, built by hand."""
    items = "".join(f"\n    {_hand_search_hit(row)}\n    " for row in rows)
    return f'<ol class="hits" start="{start}">\n    {items}\n  </ol>\n'


# --- the run ------------------------------------------------------------------------------


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "claimsdb.test_settings")
    import django

    django.setup()
    logging.getLogger("claimsdb.request").setLevel(logging.WARNING)  # a line per request


def load(cases: int) -> Any:
    """The synthetic knowledge base, loaded through the services; the reviewer who loaded it."""
    from django.contrib.auth.models import Group, User

    from claimsdb import synthetic_kb
    from claimsdb.services import bundle_load

    user = User.objects.create_user("bench-reviewer")
    user.groups.add(Group.objects.get_or_create(name="reviewer")[0])
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "bundle.json"
        synthetic_kb.write_bundle(path, cases=cases)
        bundle = json.loads(path.read_text(encoding="utf-8"))
    bundle_load(user=user, bundle=bundle, summary="list render benchmark")
    return user


def timed(paths: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """The fastest run of each path, in seconds, each run in turn ``repeats`` times."""
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(repeats):
        for name, path in paths.items():
            start = time.perf_counter()
            path()
            times[name].append(time.perf_counter() - start)
    return {name: min(found) for name, found in times.items()}


class Row(NamedTuple):
    what: str
    template: float  # seconds: the rows' markup by the template
    hand: float  # … by the hand-written builder
    request: float  # the whole request of the page (template path)

    def line(self) -> str:
        saved = (self.template - self.hand) / self.request
        return (
            f"{self.what:20}{ms(self.template):>10}{ms(self.hand):>14}"
            f"{self.template / self.hand:>7.1f}{ms(self.request):>10}{saved:>9.0%}"
        )


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def measure(o: argparse.Namespace) -> list[Row]:
    from django.core.paginator import Paginator
    from django.template.loader import render_to_string
    from django.test import Client

    from claimsdb import search
    from claimsdb.selectors.cases import case_list_filtered, case_list_rows
    from claimsdb.selectors.methods import method_list
    from claimsdb.selectors.pages import page_keys
    from claimsdb.web.views.lists import _working_case_rows, search_row

    user = load(o.cases)
    cases = case_list_rows(list(page_keys(case_list_filtered())[:PAGE_SIZE]))
    labels = {m.key: m.dimension_labels() for m in method_list()}
    hits = []
    for kind, share in (("case", 7), ("claim", 7), ("source", 6)):
        hits += list(search.search(WORD, released=False, kind=kind).page)[:share]
    page = Paginator(hits, SEARCH_PAGE).get_page(1)
    if len(cases) < PAGE_SIZE or len(hits) < SEARCH_PAGE:
        raise SystemExit(f"{len(cases)} rows and {len(hits)} hits: give --cases more cases")

    # what the view hands the template: the rows and hits with their texts put together
    case_rows = _working_case_rows(cases, labels)
    hit_rows = [search_row(hit) for hit in hits]

    def rows_by_template() -> str:
        return render_to_string("cases/_list_rows.html", {"rows": case_rows})

    def rows_by_hand() -> str:
        return hand_case_rows(case_rows)

    def hits_by_template() -> str:
        return render_to_string("search/_hits.html", {"hits": hit_rows, "page": page})

    def hits_by_hand() -> str:
        return hand_search_hits(hit_rows, page.start_index())

    if rows_by_template() != rows_by_hand() or hits_by_template() != hits_by_hand():
        raise SystemExit("the templates and the hand-written builder disagree")
    client = Client()
    client.force_login(user)

    def get(url: str, **params: str) -> Callable[[], object]:
        def fetch() -> object:
            response = client.get(url, params)
            assert response.status_code == 200, response.status_code
            return response

        return fetch

    rows = timed({"template": rows_by_template, "hand": rows_by_hand}, o.repeats)
    found = timed({"template": hits_by_template, "hand": hits_by_hand}, o.repeats)
    pages = timed({"list": get("/cases/"), "search": get("/", q=WORD)}, o.repeats)
    return [
        Row(f"case list, {PAGE_SIZE} rows", rows["template"], rows["hand"], pages["list"]),
        Row(f"search, {SEARCH_PAGE} hits", found["template"], found["hand"], pages["search"]),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=60, help="synthetic cases to load (60)")
    parser.add_argument("--repeats", type=int, default=300, help="renders of each path (300)")
    o = parser.parse_args(argv)
    setup_django()
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    databases = setup_databases(verbosity=0, interactive=False)
    try:
        vendor = connection.vendor
        measured = measure(o)
    finally:
        teardown_databases(databases, verbosity=0)
    print(f"markup of one page, fastest of {o.repeats} ({vendor}, {o.cases} cases)")
    print(f"{'':20}{'template':>10}{'hand-written':>14}{'ratio':>7}{'request':>10}{'saved':>9}")
    for row in measured:
        print(row.line())
    print("ratio: template / hand-written; request: the whole GET of the page (templates);")
    print("saved: the share of the request the hand-written builder would take off")
    return 0


if __name__ == "__main__":
    sys.exit(main())
