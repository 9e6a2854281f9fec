"""Smaller guards on input and pages: source URLs are http(s), a relation conflict is
reported once per relation, the attribution form marks the figures a rule forbids, and
record pages stay bounded however long a text is."""

from __future__ import annotations

import copy

import pytest

from claimsdb import limits
from claimsdb.records import RuleViolations, record_document
from claimsdb.services import bundle_load, case_update, record_create, record_update

from .support import new_case, signed_in

pytestmark = pytest.mark.django_db

RULE = "RULE-CP22-002-RESPONSES-NOT-CP22-003"
FIGURE = "FIG-CP22-002-RESPONSES"


def source(url: str) -> dict:
    return {
        "format": "claimsdb.source/1",
        "key": "SRC-URL-TEST",
        "title": "A source",
        "kind": "other",
        "publisher": "",
        "url": url,
        "published_on": None,
        "accessed_on": None,
        "reliability": "",
        "notes": "",
        "status": "active",
    }


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        " javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "file:///etc/passwd",
        "vbscript:msgbox(1)",
        "ftp://example.org/x",
        "//example.org/x",
        "https://",
        "https://exa mple.org/",
        "https://example.org/\x00",
    ],
)
def test_non_http_source_urls_are_refused(db, reviewer, url):
    with pytest.raises(RuleViolations) as refused:
        record_create(kind="source", user=reviewer, document=source(url), summary="s")
    assert ("url" in [v.path for v in refused.value.violations]) and refused.value.codes[0] in {
        "source.url_scheme",
        "document.invalid_value",
    }
    if "\x00" not in url:
        assert refused.value.codes == ["source.url_scheme"]


@pytest.mark.parametrize("url", ["", "https://example.org/a?b=c#d", "HTTP://EXAMPLE.ORG"])
def test_http_source_urls_and_no_url_are_accepted(db, reviewer, url):
    record_create(kind="source", user=reviewer, document=source(url), summary="s")


def relate(document: dict, other: str, kind: str) -> dict:
    document["relations"].append({"case": other, "kind": kind, "note": ""})
    return document


def relation_conflicts(call) -> list[tuple[str, str]]:
    with pytest.raises(RuleViolations) as refused:
        call()
    return [
        (v.record, v.path) for v in refused.value.violations if v.code == "scope.relation_conflict"
    ]


def test_a_relation_conflict_is_reported_once(seeded, reviewer):
    """same_event beside related_distinct, bridging a rule too: one relation, one report."""
    document = relate(record_document("case", "CP22-003"), "CP22-002", "same_event")
    found = relation_conflicts(
        lambda: case_update(user=reviewer, key="CP22-003", document=document, summary="s")
    )
    assert len(found) == 1
    # the relation replacing related_distinct bridges the rule: reported once, not per side
    document = record_document("case", "CP22-003")
    document["relations"] = [{"case": "CP22-002", "kind": "same_event", "note": ""}]
    found = relation_conflicts(
        lambda: case_update(user=reviewer, key="CP22-003", document=document, summary="s")
    )
    assert len(found) == 1


def test_a_bridge_through_a_third_case_is_reported_once_per_relation(seeded, reviewer):
    third = relate(relate(new_case("CP22-009"), "CP22-002", "same_event"), "CP22-003", "same_event")
    bundle = {"format": "claimsdb.bundle/1", "methods": [], "sources": [], "rules": []}
    bundle["cases"] = [third]
    found = relation_conflicts(lambda: bundle_load(user=reviewer, bundle=bundle, summary="s"))
    assert len(found) == 2  # two relations, each once
    assert len(set(found)) == 2


def test_the_attribution_form_marks_figures_a_rule_forbids(seeded, analyst):
    html = signed_in(analyst).get("/cases/CP22-003/attributions/edit/").content.decode()
    options = [line for line in html.split("<option") if f'value="{FIGURE}"' in line]
    assert options  # one per row of the form
    assert all(f"barred by {RULE}" in option for option in options)
    # the figure's own case, and cases no rule names, see no mark
    for key in ("CP22-002",):
        other = signed_in(analyst).get(f"/cases/{key}/attributions/edit/").content.decode()
        assert "barred by" not in other


def test_the_mark_follows_the_rule_status(seeded, reviewer, analyst):
    rule = copy.deepcopy(record_document("rule", RULE))
    rule["status"] = "withdrawn"
    record_update(kind="rule", user=reviewer, key=RULE, document=rule, summary="s")
    html = signed_in(analyst).get("/cases/CP22-003/attributions/edit/").content.decode()
    assert "barred by" not in html


def test_record_pages_stay_bounded_however_long_the_texts(seeded, reviewer, analyst):
    document = record_document("case", "CP22-003")
    long_text = ("word " * (limits.TEXT_MAX_CHARS // 5))[: limits.TEXT_MAX_CHARS]
    for name in ("summary", "account", "basis", "limits", "scope_note"):
        document[name] = long_text
    document["claims"][0]["statement"] = long_text
    case_update(user=reviewer, key="CP22-003", document=document, summary="long texts")
    response = signed_in(analyst).get("/cases/CP22-003/")
    assert response.status_code == 200
    html = response.content.decode()
    assert len(html) < 20 * limits.PAGE_TEXT_CHARS + 200_000
    assert html.count("Shortened here") == 4  # the four Markdown texts
    assert 'href="/cases/CP22-003/record.json"' in html
    # the whole text is in the record
    whole = signed_in(analyst).get("/cases/CP22-003/record.json").json()
    assert whole["account"] == long_text
