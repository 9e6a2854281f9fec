"""The case list's rows and the start page's search hits, rendered by their templates
(Jinja2, claimsdb/web/rows.py) with values that escaping gets wrong: markup, ampersands (one
already escaped), both quotes, bidirectional controls, keys that need quoting in a URL.

``golden/list_rows.json`` holds the markup the view built by hand for the same rows
before templates took it over; the templates give the same bytes, as Django's did."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import jinja2
import pytest
from django.core.paginator import Paginator
from django.template import engines
from django.utils.html import escape
from django.utils.safestring import mark_safe
from hypothesis import given
from hypothesis import strategies as st

from claimsdb.search import SearchHit
from claimsdb.web.rows import ENGINE, _escaped, render_rows
from claimsdb.web.views.lists import case_row, search_row

GOLDEN = json.loads((Path(__file__).parent / "golden" / "list_rows.json").read_text("ascii"))
RLO, PDF, LRI, PDI, RLM, RLI = "\u202e", "\u202c", "\u2066", "\u2069", "\u200f", "\u2067"
HOSTILE = f"<script>alert(\"x\")</script> & 'q' {RLO}evil{PDF} {LRI}iso{PDI} {RLM}&amp;"
METHOD = "m/1"
LABELS = {
    METHOD: {
        "setting": ("Setting <b>", {"lab": 'lab "only"', "prod": "prod & co"}),
        f"odd{RLO}": (f"Odd {RLO}'dim'", {}),
    }
}
ODD_KEY = "K&<\"'>"
CASES = [  # key, the fields of its document the row shows, its current assessment
    (
        "CP22-003",
        {
            "status": "ready",
            "title": HOSTILE,
            "summary": "Short & sweet <i>",
            "tags": ["a&b", "<t>", '"q"', "sp ace", "ü", "/s", "?=&#"],
            "claim_count": 1,
            "revision": 7,
        },
        {
            "method": METHOD,
            "values": {"setting": "lab", f"odd{RLO}": "v<"},
            "impact": None,
            "assessed_on": dt.date(2026, 3, 1),
        },
    ),
    (
        ODD_KEY,
        {
            "status": 'x"y',
            "title": "plain",
            "summary": ("long " + HOSTILE + " ") * 20,  # cut to SUMMARY_CHARS
            "tags": [],
            "claim_count": 0,
            "revision": None,
        },
        None,
    ),
    (
        f"KEY WITH SPACE{RLO}",
        {
            "status": "draft",
            "title": "&lt;already&gt;",
            "summary": "",
            "tags": ["x"],
            "claim_count": 2,
            "revision": 1234,
        },
        {"method": "unknown", "values": {}, "impact": 3, "assessed_on": dt.date(2025, 12, 31)},
    ),
    (
        "ü-key",
        {
            "status": "in_review",
            "title": mark_safe("<em>safe</em>"),
            "summary": RLO * 300,
            "tags": [RLI],
            "claim_count": 12,
            "revision": 3,
        },
        {
            "method": METHOD,
            "values": {"setting": "prod"},
            "impact": 0,
            "assessed_on": dt.date(2024, 1, 9),
        },
    ),
]
HITS = [  # titles and texts come from the search as safe HTML, matches marked
    SearchHit(
        "case",
        "CP22-003",
        "CP22-003",
        "ready",
        "",
        mark_safe("a <mark>b</mark> &amp; c"),
        mark_safe(f"&lt;x&gt; {RLO} <mark>y</mark>"),
        3,
    ),
    SearchHit("case", ODD_KEY, ODD_KEY, "draft", "", mark_safe("t"), mark_safe(""), None),
    SearchHit(
        "claim",
        'CLM-"1"<',
        "CP22-003",
        "withdrawn",
        "",
        mark_safe(""),
        mark_safe("s <mark>&amp;</mark>"),
        4,
    ),
    SearchHit("claim", "CLM-2", 'C&"<>', 'st"<', "", mark_safe(""), HOSTILE, 4),
    SearchHit(
        "source", "SRC-1", "", "active", "paper", mark_safe("<mark>src</mark>"), mark_safe(""), 1
    ),
    SearchHit("source", "SRC &<2>", "", "withdrawn", 'k"<', HOSTILE, mark_safe(""), 2),
]


def case_list_html(cases: list) -> str:
    rows = [case_row(key, fields, assessment, LABELS) for key, fields, assessment in cases]
    return render_rows("cases/_list_rows.html", {"rows": rows})


def search_hits_html() -> str:
    page = Paginator(HITS, 20).get_page(1)
    return render_rows(
        "search/_hits.html", {"hits": [search_row(hit) for hit in HITS], "page": page}
    )


def test_case_list_rows_are_the_markup_the_view_built_by_hand():
    html = case_list_html(CASES) + case_list_html([])
    assert html.split("\n") == GOLDEN["case_list"]


def test_search_hits_are_the_markup_the_view_built_by_hand():
    assert search_hits_html().split("\n") == GOLDEN["search_hits"]


def test_hostile_values_are_text_and_bidi_controls_stay_inside_their_elements():
    for html in (case_list_html(CASES), search_hits_html()):
        assert "<script" not in html and "<b>" not in html and "<i>" not in html
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;q&#x27;" in html
        assert "&amp;amp;" in html  # an escaped ampersand is escaped again, shown as typed
        assert f"{RLO}evil{PDF}" in html  # kept as written: the page's text, not its markup
    html = case_list_html(CASES)
    assert '<a href="/cases/K&amp;%3C%22&#x27;%3E/"><bdi>plain</bdi></a>' in html
    assert '<span class="badge status-x&quot;y">' in html
    assert '<a class="tag" href="?tag=%3F%3D%26%23">?=&amp;#</a>' in html
    assert (
        '<a href="/cases/KEY%20WITH%20SPACE%E2%80%AE/"><bdi>&amp;lt;already&amp;gt;</bdi></a>'
        in html
    )
    # each title and lede is isolated: an override in one ends with it
    assert (
        f"<bdi>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;q&#x27; {RLO}" in html
    )


@given(st.text())
def test_the_rows_engine_escapes_as_django_does(text):
    assert str(_escaped(text)) == str(escape(text))
    assert _escaped(mark_safe(text)) == text  # markup already safe is written as it is


def test_the_rows_engine_refuses_an_undefined_name():
    with pytest.raises(jinja2.UndefinedError):
        engines[ENGINE].from_string("<p>{{ row.missing }}</p>").render({"row": {}})


def test_the_rows_templates_write_their_markup_out():
    """The rows engine escapes every value itself (claimsdb/web/rows.py): a macro's or an
    included template's output would be escaped twice, so the templates have none."""
    folder = Path(__file__).parent.parent / "templates" / "rows"
    templates = sorted(folder.rglob("*.html"))
    assert templates
    for template in templates:
        text = template.read_text("utf-8")
        for tag in ("macro", "include", "import", "call", "extends", "autoescape"):
            assert f"{{% {tag}" not in text and f"{{%- {tag}" not in text, (template, tag)
