"""Hostile text in every field, saved through the services, is inert on every page."""

from __future__ import annotations

import pytest
from django.test import Client

from claimsdb.models import Revision, Source
from claimsdb.records import record_document
from claimsdb.services import record_create, record_update
from claimsdb.web.markdown import render_markdown

from .support import assert_inert, signed_in, source_document, submit

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "[x](javascript:alert(1))",
    '<a href="&#106;avascript:alert(1)">entity</a>',
    "[entity](&#106;avascript:alert(1))",
    "[d](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    '"><script>alert(1)</script>',
    "'><img src=x onerror=alert(1)>",
    '<iframe src="javascript:alert(1)"></iframe>',
    '<div onmouseover="alert(1)">hover</div>',
    "<scr<script>ipt>alert(1)</script>",
    '<a href="java\tscript:alert(1)">tab</a>',
    "[x](JaVaScRiPt:alert(1))",
    "[y]( javascript:alert(1))",
    "![img](javascript:alert(1))",
    "![img](https://tracker.example/pixel.png)",
    "<b unclosed <i onclick=alert(1)>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<<script>script>alert(1)<</script>/script>",
    "<style>body{display:none}</style>",
    "`<script>alert(1)</script>`",
    '[link](https://ok.example/"onmouseover="alert(1))',
    '<https://ok.example/?q="><script>alert(1)</script>>',
    "<!-- <script>alert(1)</script> -->",
    "<object data=javascript:alert(1)></object>",
    "<form action=javascript:alert(1)><button>go</button></form>",
    "<base href=javascript:alert(1)//>",
    "<meta http-equiv=refresh content='0;url=javascript:alert(1)'>",
    "[ref]: javascript:alert(1)\n\n[ref]",
]
PAYLOAD = "\n\n".join(HOSTILE)
SHORT = "<script>alert(1)</script><img src=x onerror=alert(1)> <svg onload=alert(1)>"
CASE = "CP22-003"


def hostile_claim(claim_id: str) -> dict:
    return {
        "id": claim_id,
        "statement": PAYLOAD,
        "status": "partially_supported",
        "status_note": PAYLOAD,
        "basis": "analyst_inference",
        "origin": "human",
        "evidence": [
            {"source": "SRC-XSS", "relation": "supports", "locator": PAYLOAD},
            {"source": "SRC-SGLANG-KV-TRANSFER-SAFETY", "relation": "context", "locator": SHORT},
        ],
    }


@pytest.fixture
def hostile(seeded, reviewer):
    """Hostile text in every text field of every kind of record, through the services."""
    record_create(
        kind="source",
        user=reviewer,
        summary=SHORT,
        document={
            "format": "claimsdb.source/1",
            "key": "SRC-XSS",
            "title": SHORT + " alert source",
            "kind": "other",
            "publisher": SHORT,
            "url": "",
            "published_on": None,
            "accessed_on": None,
            "reliability": "",
            "notes": PAYLOAD,
            "status": "active",
        },
    )
    record_create(
        kind="source",
        user=reviewer,
        summary="data url source",
        document=source_document("SRC-XSS-DATA", title="data"),
    )
    # Writes refuse such URLs now (source.url_scheme); records stored before that still hold
    # them, and pages must keep them inert.
    Source.objects.filter(key="SRC-XSS").update(url="javascript:alert(1)")
    data_url = " data:text/html,<script>alert(1)</script>"
    Source.objects.filter(key="SRC-XSS-DATA").update(url=data_url)
    record_create(
        kind="method",
        user=reviewer,
        summary=SHORT,
        document={
            "format": "claimsdb.method/1",
            "key": "xss.method/1",
            "title": SHORT,
            "status": "active",
            "dimensions": [
                {
                    "key": "setting",
                    "label": SHORT,
                    "values": [{"key": "lab", "label": SHORT}, {"key": "x", "label": "x"}],
                }
            ],
            "impact": {"min": 0, "max": 2, "labels": {"0": SHORT, "1": "one", "2": "two"}},
        },
    )
    before = record_document("case", CASE)
    document = record_document("case", CASE)
    document.update(
        title=SHORT + " alert",
        summary=PAYLOAD,
        scope_note=PAYLOAD,
        account=PAYLOAD,
        basis=PAYLOAD,
        limits=PAYLOAD,
        tags=["<script>alert(1)</script>", "x\" onmouseover='alert(1)"],
    )
    document["claims"].append(hostile_claim("CLM-CP22-003-XSS"))
    document["claims"][0]["evidence"].append(
        {"source": "SRC-XSS-DATA", "relation": "context", "locator": "data"}
    )
    document["assessments"].append(
        {
            "method": "xss.method/1",
            "assessed_on": "2026-11-30",
            "assessor": SHORT,
            "values": {"setting": "lab"},
            "impact": None,
            "impact_ungraded_reason": PAYLOAD,
            "narrative": PAYLOAD,
            "evidence_basis": {"claims": ["CLM-CP22-003-XSS"], "sources": ["SRC-XSS"]},
        }
    )
    document["controls"].append({"kind": "fix", "text": PAYLOAD})
    document["unknowns"].append({"kind": "contradiction", "text": PAYLOAD})
    document["figures"].append(
        {
            "id": "FIG-CP22-003-XSS",
            "value": 3.5,
            "unit": SHORT,
            "measure": SHORT,
            "scope": "lab",
            "description": PAYLOAD,
            "claims": ["CLM-CP22-003-XSS"],
        }
    )
    document["attributions"].append(
        {"figure": "FIG-CP22-003-XSS", "role": "context", "note": PAYLOAD}
    )
    document["relations"][0]["note"] = PAYLOAD
    record_update(kind="case", key=CASE, user=reviewer, document=document, summary=PAYLOAD)
    rule = record_document("rule", "RULE-CP22-002-RESPONSES-NOT-CP22-003")
    rule["reason"] = PAYLOAD
    record_update(kind="rule", key=rule["key"], user=reviewer, document=rule, summary=SHORT)
    numbers = sorted(
        Revision.objects.filter(record_kind="case", record_key=CASE).values_list(
            "number", flat=True
        )
    )
    assert record_document("case", CASE) != before
    return numbers


def pages(numbers: list[int]) -> list[str]:
    first, last = numbers[0], numbers[-1]
    return [
        f"/cases/{CASE}/",
        f"/cases/{CASE}/revisions/{last}/",
        f"/cases/{CASE}/revisions/{first}/",
        f"/cases/{CASE}/diff/{first}/{last}/",
        f"/cases/{CASE}/revisions/{first}/revert/",
        f"/cases/{CASE}/history/",
        "/?q=alert",
        "/?q=<script>",
        "/?q=%22%3E%3Cscript%3Ealert(1)%3C/script%3E",
        "/",
        "/cases/",
        "/cases/?tag=%3Cscript%3Ealert(1)%3C/script%3E",
        "/sources/",
        "/sources/SRC-XSS/",
        "/sources/SRC-XSS-DATA/",
        "/sources/SRC-XSS/history/",
        "/rules/",
        "/rules/RULE-CP22-002-RESPONSES-NOT-CP22-003/",
        "/rules/RULE-CP22-002-RESPONSES-NOT-CP22-003/history/",
        "/methods/",
        "/methods/xss.method/1/",
        f"/cases/{CASE}/edit/",
        f"/cases/{CASE}/claims/CLM-CP22-003-XSS/edit/",
        f"/cases/{CASE}/claims/",
        f"/cases/{CASE}/claims/CLM-CP22-003-XSS/withdraw/",
        f"/cases/{CASE}/assessments/2/edit/",
        f"/cases/{CASE}/assessments/new/?method=xss.method/1",
        f"/cases/{CASE}/figures/edit/",
        f"/cases/{CASE}/attributions/edit/",
        f"/cases/{CASE}/relations/edit/",
        f"/cases/{CASE}/controls/edit/",
        f"/cases/{CASE}/unknowns/edit/",
        "/sources/SRC-XSS/edit/",
        "/rules/RULE-CP22-002-RESPONSES-NOT-CP22-003/edit/",
        "/methods/xss.method/1/edit/",
    ]


def test_every_page_showing_hostile_text_is_inert(hostile, reviewer):
    client = signed_in(reviewer)
    for url in pages(hostile):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        try:
            assert_inert(html)
        except AssertionError as error:
            raise AssertionError(f"{url}: {error}") from None


def test_hostile_text_is_shown_as_text(hostile, reviewer):
    html = signed_in(reviewer).get(f"/cases/{CASE}/").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # plain text: escaped, visible
    assert "&lt;img src=x onerror=alert(1)&gt;" in html  # markdown: raw HTML shown as text
    # the source's javascript: and data: URLs are shown, never linked
    assert ">javascript:alert(1)<" in html
    assert 'href=" data:' not in html and 'href="data:' not in html


def test_refused_hostile_input_is_inert_when_shown_back(hostile, analyst):
    """A refused save shows the analyst's input and the rule's reason again: both escaped."""
    response = submit(
        signed_in(analyst),
        f"/cases/{CASE}/attributions/edit/",
        {
            "attributions-1-figure": "FIG-CP22-002-RESPONSES",
            "attributions-1-role": "impact_basis",
            "attributions-1-note": PAYLOAD,
            "summary": SHORT,
        },
    )
    assert response.status_code == 422
    assert_inert(response.content.decode())


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_renderer_output_is_inert(text):
    assert_inert(str(render_markdown(text)))


def test_markdown_keeps_ordinary_formatting_and_marks_links():
    html = str(
        render_markdown("# Heading\n\n*em* **strong** [site](https://example.org)\n\n- a\n- b")
    )
    assert '<h3 dir="auto">Heading</h3>' in html
    assert "<em>em</em>" in html and "<strong>strong</strong>" in html
    assert '<a href="https://example.org" rel="noopener noreferrer nofollow">site</a>' in html
    assert "<ul>" in html and '<li dir="auto">a</li>' in html


def test_anonymous_sees_none_of_it(hostile):
    client = Client()
    for url in pages(hostile):
        response = client.get(url)
        assert response.status_code in (200, 302, 404), url
        html = response.content.decode()
        # every hostile text holds it, no query does (the search page echoes its query)
        assert "onerror=alert(1)" not in html, url
        assert_inert(html)


@pytest.mark.parametrize(
    "live",
    [
        "<script>alert(1)</script>",
        '<img src="x" onerror="alert(1)">',
        "<svg onload=alert(1)>",
        '<a href="javascript:alert(1)">x</a>',
        '<a href=" JaVa\tScRiPt:alert(1)">x</a>',
        '<a href="data:text/html,x">x</a>',
        '<a href="&#106;avascript:alert(1)">x</a>',
        '<div onclick="x()">x</div>',
        '<p style="background:url(x)">x</p>',
    ],
)
def test_the_inertness_check_catches_live_markup(live):
    """The checker itself: each of these must be reported."""
    with pytest.raises(AssertionError):
        assert_inert(f"<p>{live}</p>")
