"""Pickers: sources, figures and cases chosen by key in text inputs with a server-filtered
datalist (claimsdb/web/pickers.py); no page lists every record of a kind."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from claimsdb.models import Case, Figure, Relation, Source

from .support import edit_form, field_block, get_queries, revision_count, signed_in, text_of

CASE = "CP22-003"
SOURCE = "SRC-SGLANG-PR-35049"
FIGURE = "FIG-CP22-002-RESPONSES"
RULE = "RULE-CP22-002-RESPONSES-NOT-CP22-003"
PICKER_PAGES = {
    f"/cases/{CASE}/claims/new/": "evidence-0-source",
    f"/cases/{CASE}/claims/add/": "c0-evidence-0-source",
    f"/cases/{CASE}/relations/edit/": "relations-0-case",
    f"/cases/{CASE}/attributions/edit/": "attributions-0-figure",
    "/rules/new/": "rule-figure",
}


@pytest.fixture
def client(seeded, reviewer):
    return signed_in(reviewer)


def many_sources(n: int, offset: int = 0) -> None:
    Source.objects.bulk_create(
        Source(
            key=f"SRC-BULK-{offset + i:05d}",
            title=f"Bulk report {offset + i}",
            kind="other",
            publisher="Bulk Press",
        )
        for i in range(n)
    )


def options_of(html: str, list_id: str) -> list[str]:
    block = re.search(rf'<datalist id="{re.escape(list_id)}">(.*?)</datalist>', html, re.S)
    assert block, list_id
    return re.findall(r'<option value="([^"]*)"', block.group(1))


def test_pickers_are_text_inputs_with_a_bounded_datalist(client):
    many_sources(60)
    for url, name in PICKER_PAGES.items():
        html = client.get(url).content.decode()
        assert f'<select name="{name}"' not in html, url
        field = re.search(rf'<input type="text" name="{name}"[^>]*>', html).group(0)
        assert f'list="id_{name}-suggestions"' in field and "data-suggest=" in field, url
        assert 0 < len(options_of(html, f"id_{name}-suggestions")) <= 20, url
        assert '<script src="/static/claimsdb/picker.js" defer></script>' in html


def test_picker_pages_take_as_many_queries_with_many_more_sources(client):
    for url in PICKER_PAGES:
        client.get(url)
    before = {url: get_queries(client, url) for url in PICKER_PAGES}
    many_sources(300)
    assert {url: get_queries(client, url) for url in PICKER_PAGES} == before


def test_suggestions_match_key_title_and_publisher_keys_first(client):
    many_sources(30)
    found = re.findall(
        r'value="([^"]*)"', client.get("/suggest/source/?q=sglang-pr").content.decode()
    )
    assert SOURCE in found and all("SGLANG-PR" in key for key in found)
    by_publisher = client.get("/suggest/source/", {"q": "bulk press"}).content.decode()
    assert by_publisher.count("<option") == 20  # a page, not all 30
    by_title = client.get("/suggest/source/", {"q": "Bulk report 7"}).content.decode()
    assert 'value="SRC-BULK-00007"' in by_title
    exact = client.get("/suggest/source/", {"q": "SRC-BULK-00012"}).content.decode()
    assert re.findall(r'value="([^"]*)"', exact)[0] == "SRC-BULK-00012"
    assert "<script" not in by_title and "Cache-Control" in client.get("/suggest/case/").headers


def test_suggestions_take_one_query_however_many_match(client):
    many_sources(200)
    client.get("/suggest/source/?q=bulk")
    assert get_queries(client, "/suggest/source/?q=bulk") == get_queries(
        client, "/suggest/source/?q=SRC-SGLANG"
    )


def test_figure_suggestions_for_a_case_leave_its_own_out_and_mark_barred_ones(client):
    html = client.get("/suggest/figure/", {"case": CASE}).content.decode()
    assert f'<option value="{FIGURE}">' in html and f"— barred by {RULE}" in html
    assert "FIG-CP22-003-" not in html
    cases = client.get("/suggest/case/", {"case": CASE}).content.decode()
    assert f'value="{CASE}"' not in cases and 'value="CP22-002"' in cases


ANOTHER_EVENT = "— another event: not attributable to this case"


def options_with_labels(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<option value="([^"]*)">([^<]*)</option>', html)


def case_with_figures(key: str, n: int = 1) -> Case:
    """A case row with ``n`` figures, unrelated to any other case."""
    case = Case.objects.create(key=key, title=f"Case {key}")
    Figure.objects.bulk_create(
        Figure(
            case=case,
            figure_id=f"FIG-{key}-N{i}",
            position=i,
            value="3",
            unit="requests",
            measure="requests",
            scope="production",
            description=f"Requests of {key}",
        )
        for i in range(n)
    )
    return case


def test_figure_suggestions_mark_another_events_figures_attributable_ones_first(client):
    html = client.get("/suggest/figure/", {"case": CASE}).content.decode()
    # the seed's only other figure belongs to CP22-002, related_distinct: another event
    assert ANOTHER_EVENT in html and f"— barred by {RULE}" in html
    assert dict(options_with_labels(html))[FIGURE].endswith(f"{ANOTHER_EVENT} — barred by {RULE}")
    same = case_with_figures("CP99-001")
    Relation.objects.create(case=same, other=Case.objects.get(key=CASE), kind="same_event")
    case_with_figures("CP99-002")
    html = client.get("/suggest/figure/", {"case": CASE}).content.decode()
    options = options_with_labels(html)
    keys = [key for key, _ in options]
    assert keys[0] == "FIG-CP99-001-N0", keys  # the attributable one first
    assert ANOTHER_EVENT not in options[0][1]
    assert ANOTHER_EVENT in dict(options)["FIG-CP99-002-N0"]
    typed = client.get("/suggest/figure/", {"case": CASE, "q": "FIG-CP99"}).content.decode()
    assert re.findall(r'<option value="([^"]*)"', typed) == ["FIG-CP99-001-N0", "FIG-CP99-002-N0"]
    # the page's own datalist says the same
    page = client.get(f"/cases/{CASE}/attributions/edit/").content.decode()
    assert ANOTHER_EVENT in page


def test_figure_suggestions_for_a_case_take_as_many_queries_with_many_more_figures(client):
    case_with_figures("CP99-001", 2)
    url = f"/suggest/figure/?case={CASE}"
    client.get(url)
    before = get_queries(client, url), get_queries(client, url + "&q=FIG")
    for n in range(2, 8):
        case_with_figures(f"CP99-00{n}", 10)
    after = get_queries(client, url), get_queries(client, url + "&q=FIG")
    assert after == before
    html = client.get(url).content.decode()
    assert html.count("<option") == 20 and html.count(ANOTHER_EVENT) == 20


def test_suggestions_need_a_role(seeded):
    assert Client().get("/suggest/source/?q=src").status_code == 302
    assert Client().get("/suggest/nothing/").status_code == 302


def test_unknown_kind_is_not_found(client):
    assert client.get("/suggest/claim/").status_code == 404


def test_an_unknown_key_is_refused_at_its_field_naming_the_nearest(client):
    before = revision_count()
    url = f"/cases/{CASE}/claims/new/"
    data = edit_form(client.get(url).content.decode()).data(
        {
            "claim-statement": "A claim citing a mistyped source.",
            "evidence-0-source": "SRC-SGLANG-PR-3504",
            "evidence-0-relation": "supports",
            "summary": "Mistyped",
        }
    )
    response = client.post(url, data)
    assert response.status_code == 400
    html = response.content.decode()
    message = text_of(field_block(html, "evidence-0-source"))
    assert "There is no source SRC-SGLANG-PR-3504. Nearest:" in message
    assert SOURCE in message.split("Nearest:")[1]
    assert edit_form(html).data()["evidence-0-source"] == ["SRC-SGLANG-PR-3504"]
    assert revision_count() == before


def test_an_unknown_case_in_a_relation_is_refused_naming_the_nearest(client):
    url = f"/cases/{CASE}/relations/edit/"
    data = edit_form(client.get(url).content.decode()).data(
        {
            "relations-0-case": "CP22-02",
            "relations-0-kind": "related_but_distinct",
            "summary": "Relate",
        }
    )
    response = client.post(url, data)
    assert response.status_code == 400
    message = text_of(field_block(response.content.decode(), "relations-0-case"))
    assert "There is no case CP22-02. Nearest:" in message and "CP22-002" in message


def test_a_typed_key_reaches_the_rules_as_a_chosen_one_did(client):
    url = f"/cases/{CASE}/attributions/edit/"
    data = edit_form(client.get(url).content.decode()).data(
        {"attributions-0-figure": FIGURE, "attributions-0-role": "context", "summary": "Use it"}
    )
    response = client.post(url, data)
    assert response.status_code == 422  # the picker knows it; the scope rule refuses it
    assert RULE in field_block(response.content.decode(), "attributions-0-figure")


def test_an_unknown_key_carries_the_code_of_the_rule_that_would_refuse_it(seeded):
    from claimsdb.web.forms import EvidenceLinkForm, RelationForm
    from claimsdb.web.pickers import Picker

    form = EvidenceLinkForm(
        {"x-source": "SRC-NOPE", "x-relation": "supports"},
        prefix="x",
        source_picker=Picker.of("source"),
    )
    assert form.errors.as_data()["source"][0].code == "evidence.source_unknown"
    form = RelationForm(
        {"x-case": "CP99-404", "x-kind": "related_distinct"},
        prefix="x",
        case_picker=Picker.of("case"),
    )
    assert form.errors.as_data()["case"][0].code == "relation.case_unknown"
