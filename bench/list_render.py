"""What the case list's rows and the search hits cost to render: Jinja2 vs Django's templates.

    .venv/bin/python bench/list_render.py                   # SQLite, in memory
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/claimsdb .venv/bin/python bench/list_render.py
    .venv/bin/python bench/list_render.py --repeats 50      # a quick run

The rows and hits render through Jinja2 templates (``templates/rows/``, claimsdb/web/rows.py).
Before, they rendered through Django's; those templates are kept here (``DJANGO_ROWS``,
``DJANGO_HITS``) as the baseline Jinja2 is measured against, and the run checks that both
give the same bytes.

In a throwaway test database (Django's, dropped at the end) it loads ``--cases`` synthetic
cases (``claimsdb.synthetic_kb``) through the services, reads one page of the case list
(``PAGE_SIZE`` rows, as the view reads them) and ``SEARCH_PAGE`` hits (a third of each kind),
then times each path ``--repeats`` times, interleaved, from the rows as the view has them
to their HTML; and, for scale, the whole request for ``GET /cases/`` and a search. It
prints the fastest of the runs (the least disturbed by other work on the machine) and the
ratio Django / Jinja2.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGE_SIZE = 50  # rows of a page of the case list (claimsdb.web.pagination.PAGE_SIZE)
SEARCH_PAGE = 20  # hits on a page of search results (claimsdb.search.PER_PAGE)
WORD = "vLLM"  # in case titles, claim statements and source titles of the synthetic cases


# --- the Django templates the rows and hits rendered through before Jinja2 took them over ---

DJANGO_ROWS = """<ul class="case-list">
{% for row in rows %}
  <li>
    <p class="kicker"><span class="key">{{ row.key }}</span> <span class="badge status-{{ row.status }}">{{ row.status_label }}</span>{% for t, query in row.tag_links %} <a class="tag" href="?tag={{ query }}">{{ t }}</a>{% endfor %}</p>
    <h2><a href="{{ row.url }}"><bdi>{{ row.title }}</bdi></a></h2>
    {% if row.summary %}<p><bdi>{{ row.summary_shown }}</bdi></p>{% endif %}
    <p class="meta">{{ row.meta }}</p>
  </li>
{% empty %}
  <li class="muted">No case matches these filters.</li>
{% endfor %}
</ul>
"""  # noqa: E501

DJANGO_HITS = """<ol class="hits" start="{{ page.start_index }}">
    {% for row in hits %}{% with hit=row.hit %}
    {% if hit.kind == "case" %}<li class="hit-case"><span class="kind">case</span> <a href="{{ row.url }}"><span class="key">{{ hit.key }}</span> <bdi>{{ hit.title }}</bdi></a>{% if hit.status != "ready" %} <span class="badge">{{ row.status_label }}</span>{% endif %}{% if hit.matched %} <span class="matched">found in its {{ hit.matched }}</span>{% endif %}<p class="muted"><bdi>{{ hit.text }}</bdi></p></li>
    {% elif hit.kind == "claim" %}<li class="hit-claim"><span class="kind">claim</span> <a href="{{ row.url }}#{{ hit.key }}"><span class="key">{{ hit.key }}</span></a> <span class="badge claim-{{ hit.status }}">{{ row.status_label }}</span> <bdi>{{ hit.text }}</bdi> <span class="muted">in {{ hit.case_key }}</span>{% if hit.matched %} <span class="matched">found in its {{ hit.matched }}</span>{% endif %}</li>
    {% elif hit.kind == "component" %}<li class="hit-component"><span class="kind">component</span> <a href="{{ row.url }}"><bdi>{{ hit.title }}</bdi></a> <span class="muted">{{ hit.key }}</span>{% if hit.status != "active" %} <span class="badge">{{ row.status_label }}</span>{% endif %}{% if hit.matched %} <span class="matched">found in its {{ hit.matched }}</span>{% endif %}</li>
    {% else %}<li class="hit-source"><span class="kind">source</span> <a href="{{ row.url }}"><bdi>{{ hit.title }}</bdi></a> <span class="kind">{{ row.kind_label }}</span> <span class="muted">{{ hit.key }}</span>{% if hit.status != "active" %} <span class="badge">{{ row.status_label }}</span>{% endif %}{% if hit.matched %} <span class="matched">found in its {{ hit.matched }}</span>{% endif %}</li>{% endif %}
    {% endwith %}{% endfor %}
  </ol>
"""  # noqa: E501


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
    django: float  # seconds: the rows' markup by Django's template
    jinja: float  # … by the Jinja2 template the page uses
    request: float  # the whole request of the page (Jinja2's rows)

    def line(self) -> str:
        saved = (self.django - self.jinja) / (self.request + self.django - self.jinja)
        return (
            f"{self.what:20}{ms(self.django):>10}{ms(self.jinja):>10}"
            f"{self.django / self.jinja:>7.1f}{ms(self.request):>10}{saved:>9.0%}"
        )


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def measure(o: argparse.Namespace) -> list[Row]:
    from django.core.paginator import Paginator
    from django.template import engines
    from django.test import Client

    from claimsdb import search
    from claimsdb.selectors.cases import case_list_filtered, case_list_rows
    from claimsdb.selectors.methods import method_list
    from claimsdb.selectors.pages import page_keys
    from claimsdb.web.rows import render_rows
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

    django_rows = engines["django"].from_string(DJANGO_ROWS)
    django_hits = engines["django"].from_string(DJANGO_HITS)

    def rows_by_django() -> str:
        return django_rows.render({"rows": case_rows})

    def rows_by_jinja() -> str:
        return render_rows("cases/_list_rows.html", {"rows": case_rows})

    def hits_by_django() -> str:
        return django_hits.render({"hits": hit_rows, "page": page})

    def hits_by_jinja() -> str:
        return render_rows("search/_hits.html", {"hits": hit_rows, "page": page})

    if rows_by_django() != rows_by_jinja() or hits_by_django() != hits_by_jinja():
        raise SystemExit("the Django and the Jinja2 templates disagree")
    client = Client()
    client.force_login(user)

    def get(url: str, **params: str) -> Callable[[], object]:
        def fetch() -> object:
            response = client.get(url, params)
            assert response.status_code == 200, response.status_code
            return response

        return fetch

    rows = timed({"django": rows_by_django, "jinja": rows_by_jinja}, o.repeats)
    found = timed({"django": hits_by_django, "jinja": hits_by_jinja}, o.repeats)
    pages = timed({"list": get("/cases/"), "search": get("/", q=WORD)}, o.repeats)
    return [
        Row(f"case list, {PAGE_SIZE} rows", rows["django"], rows["jinja"], pages["list"]),
        Row(f"search, {SEARCH_PAGE} hits", found["django"], found["jinja"], pages["search"]),
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
    print(f"{'':20}{'Django':>10}{'Jinja2':>10}{'ratio':>7}{'request':>10}{'saved':>9}")
    for row in measured:
        print(row.line())
    print("ratio: Django / Jinja2; request: the whole GET of the page (Jinja2's rows);")
    print("saved: the share of the request with Django's rows that Jinja2's take off")
    return 0


if __name__ == "__main__":
    sys.exit(main())
