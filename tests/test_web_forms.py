"""Editing forms that keep the analyst's input: a new source created from the claim form,
"Add another row" without JavaScript, barred figures marked on the attribution form, and
rule keys in refusals linked to the rules."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.http import QueryDict
from django.template import Context, Template
from django.utils import timezone

from claimsdb.models import FormDraft, Revision, Source
from claimsdb.records import record_document
from claimsdb.services import record_create
from claimsdb.web import stash
from claimsdb.web.editing import ROWS_MAX, with_blank_row

from .support import (
    edit_form,
    field_block,
    get_queries,
    new_case,
    revision_count,
    signed_in,
    text_of,
)

CASE = "CP22-003"
NEW_CLAIM = f"/cases/{CASE}/claims/new/"
ATTRIBUTIONS = f"/cases/{CASE}/attributions/edit/"
RULE = "RULE-CP22-002-RESPONSES-NOT-CP22-003"
FIGURE = "FIG-CP22-002-RESPONSES"
SOURCE = "SRC-SGLANG-PR-35049"
TYPED = {
    "claim-statement": "Deferred release closes the window for Mooncake.",
    "claim-status": "supported",
    "claim-basis": "reported_finding",
    "claim-status_note": "kept across pages",
    "evidence-0-source": SOURCE,
    "evidence-0-relation": "supports",
    "evidence-0-locator": "PR description",
    "evidence-1-relation": "context",
    "evidence-1-locator": "Section 2",
    "summary": "Add claim C",
}
NEW_SOURCE = {
    "source-key": "SRC-VENDOR-2026-07",
    "source-title": "Vendor advisory on KV transfers",
    "source-kind": "vendor_advisory",
    "source-publisher": "Vendor",
    "source-status": "active",
    "summary": "New source for claim C",
}


@pytest.fixture
def client(seeded, analyst):
    return signed_in(analyst)


def typed_form(client, url=NEW_CLAIM, changes=TYPED):
    return edit_form(client.get(url).content.decode()).data(changes)


def rows_of(html: str, prefix: str = "evidence") -> int:
    return int(edit_form(html).data()[f"{prefix}-TOTAL_FORMS"][0])


# --- Add another row -------------------------------------------------------------------------


def test_add_another_row_shows_one_more_row_keeps_the_input_and_writes_nothing(client):
    before = revision_count()
    data = typed_form(client, changes={**TYPED, "summary": ""})
    assert int(data["evidence-TOTAL_FORMS"][0]) == 2
    response = client.post(NEW_CLAIM, {**data, "add_row": "evidence"})
    assert response.status_code == 200
    html = response.content.decode()
    kept = edit_form(html).data()
    assert rows_of(html) == 3
    for name, value in TYPED.items():
        if name != "summary":
            assert kept[name] == [value], name
    # nothing is checked yet: the empty summary and the half-filled row show no error
    assert 'class="error"' not in html
    assert "evidence-2-source" in kept
    assert revision_count() == before


def test_three_more_rows_then_a_save_writes_three_links(client):
    data = typed_form(client)
    for _ in range(3):
        html = client.post(NEW_CLAIM, {**data, "add_row": "evidence"}).content.decode()
        data = edit_form(html).data()
    assert int(data["evidence-TOTAL_FORMS"][0]) == 5
    sources = [SOURCE, "SRC-SGLANG-ISSUE-24527", "SRC-SGLANG-PR-35360"]
    for row, source in enumerate(sources):
        data[f"evidence-{row}-source"] = [source]
        data[f"evidence-{row}-relation"] = ["supports"]
    data["summary"] = ["Add claim C with three links"]
    response = client.post(NEW_CLAIM, data)
    assert response.status_code == 302, text_of(response.content.decode())
    claim = record_document("case", CASE)["claims"][-1]
    assert [link["source"] for link in claim["evidence"]] == sources


def test_add_another_row_works_on_the_other_list_editors(client):
    controls = f"/cases/{CASE}/controls/edit/"
    for url, prefix in ((ATTRIBUTIONS, "attributions"), (controls, "controls")):
        data = edit_form(client.get(url).content.decode()).data()
        rows = int(data[f"{prefix}-TOTAL_FORMS"][0])
        html = client.post(url, {**data, "add_row": prefix}).content.decode()
        assert rows_of(html, prefix) == rows + 1


def test_the_enter_key_saves_rather_than_adding_a_row(client):
    """Implicit submission clicks a form's first submit button: it must be a plain save."""
    html = client.get(NEW_CLAIM).content.decode()
    form = html.split('<form method="post" class="edit">', 1)[1]
    first = re.search(r"<button[^>]*>", form).group(0)
    assert 'type="submit"' in first and "name=" not in first


# --- a new source from the claim form ----------------------------------------------------------


def leave_for_a_new_source(client, row="1"):
    response = client.post(NEW_CLAIM, {**typed_form(client), "new_source": row})
    assert response.status_code == 302
    location = response["Location"]
    assert location.startswith("/sources/new/?return=")
    return location, location.split("=", 1)[1]


def test_new_source_round_trip_keeps_the_claim_and_chooses_the_source(client):
    before = revision_count()
    location, token = leave_for_a_new_source(client)
    assert revision_count() == before  # leaving the form saves nothing
    page = client.get(location).content.decode()
    assert "takes you back to the form you were filling in" in text_of(page)
    response = client.post(location, edit_form(page).data(NEW_SOURCE))
    assert response.status_code == 302
    assert response["Location"] == f"{NEW_CLAIM}?resume={token}"
    # the source went through the services, with its revision
    assert Source.objects.filter(key="SRC-VENDOR-2026-07").exists()
    assert Revision.objects.filter(record_kind="source", record_key="SRC-VENDOR-2026-07").exists()

    back = client.get(response["Location"])
    assert back.status_code == 200
    html = back.content.decode()
    data = edit_form(html).data()
    for name, value in TYPED.items():
        if not name.startswith("evidence-1-source"):
            assert data[name] == [value], name
    assert data["evidence-1-source"] == ["SRC-VENDOR-2026-07"]  # the row that asked for it
    assert "Source SRC-VENDOR-2026-07 is chosen in evidence link 2" in text_of(html)
    assert data["draft"] == [token]  # the form is the draft until it is saved
    # a reload shows it again, as it was
    again = edit_form(client.get(response["Location"]).content.decode()).data()
    assert {**again, "csrfmiddlewaretoken": []} == {**data, "csrfmiddlewaretoken": []}

    response = client.post(NEW_CLAIM, data)
    assert response.status_code == 302
    claim = record_document("case", CASE)["claims"][-1]
    assert claim["statement"] == TYPED["claim-statement"]
    assert [link["source"] for link in claim["evidence"]] == [SOURCE, "SRC-VENDOR-2026-07"]
    assert not FormDraft.objects.exists()  # saved: the draft is gone


def test_a_source_asked_for_outside_a_row_fills_a_new_row(client):
    location, token = leave_for_a_new_source(client, row="")
    page = client.get(location).content.decode()
    client.post(location, edit_form(page).data(NEW_SOURCE))
    html = client.get(f"{NEW_CLAIM}?resume={token}").content.decode()
    data = edit_form(html).data()
    assert data["evidence-TOTAL_FORMS"] == ["3"]
    assert data["evidence-2-source"] == ["SRC-VENDOR-2026-07"]
    assert data["evidence-1-locator"] == ["Section 2"]


def test_a_refused_source_keeps_the_way_back(client):
    location, token = leave_for_a_new_source(client)
    page = client.get(location).content.decode()
    refused = client.post(location, edit_form(page).data({**NEW_SOURCE, "source-key": "bad key"}))
    assert refused.status_code in (400, 422)
    assert f"?resume={token}" in refused.content.decode()  # the cancel link still goes back
    response = client.post(location, edit_form(refused.content.decode()).data(NEW_SOURCE))
    assert response["Location"] == f"{NEW_CLAIM}?resume={token}"


def test_cancelling_the_source_returns_to_the_claim_as_typed(client):
    location, token = leave_for_a_new_source(client)
    page = client.get(location).content.decode()
    assert f'href="{NEW_CLAIM}?resume={token}"' in page
    html = client.get(f"{NEW_CLAIM}?resume={token}").content.decode()
    assert edit_form(html).data()["claim-statement"] == [TYPED["claim-statement"]]
    assert "no source was created" in text_of(html)
    assert not Source.objects.filter(key="SRC-VENDOR-2026-07").exists()


def test_a_draft_survives_reloads_a_new_session_and_the_back_button(client, analyst):
    location, token = leave_for_a_new_source(client)
    client.get(f"{NEW_CLAIM}?resume={token}")
    for other in (client, signed_in(analyst)):  # reloaded, or opened after signing in again
        html = other.get(f"{NEW_CLAIM}?resume={token}").content.decode()
        assert "There is no draft" not in text_of(html)
        assert edit_form(html).data()["claim-statement"] == [TYPED["claim-statement"]]
    # the back button to the empty form: the draft is offered there
    html = signed_in(analyst).get(NEW_CLAIM).content.decode()
    assert f'href="?resume={token}"' in html
    # the source page still leads back to it
    page = client.get(location).content.decode()
    assert f"?resume={token}" in page


def test_later_posts_of_a_draft_update_it(client):
    _, token = leave_for_a_new_source(client)
    data = edit_form(client.get(f"{NEW_CLAIM}?resume={token}").content.decode()).data()
    client.post(
        NEW_CLAIM, {**data, "claim-statement": "Typed after coming back.", "add_row": "evidence"}
    )
    html = client.get(f"{NEW_CLAIM}?resume={token}").content.decode()
    kept = edit_form(html).data()
    assert kept["claim-statement"] == ["Typed after coming back."]
    assert kept["evidence-TOTAL_FORMS"] == ["3"]
    # refused (no summary): kept too
    client.post(NEW_CLAIM, {**kept, "claim-status_note": "after a refusal", "summary": ""})
    kept = edit_form(client.get(f"{NEW_CLAIM}?resume={token}").content.decode()).data()
    assert kept["claim-status_note"] == ["after a refusal"]
    assert FormDraft.objects.count() == 1


def test_a_discarded_draft_is_gone_and_its_link_opens_an_empty_form(client):
    before = revision_count()
    _, token = leave_for_a_new_source(client)
    data = edit_form(client.get(f"{NEW_CLAIM}?resume={token}").content.decode()).data()
    response = client.post(NEW_CLAIM, {**data, "discard_draft": "1"})
    assert response.status_code == 302 and response["Location"] == NEW_CLAIM
    assert not FormDraft.objects.exists() and revision_count() == before
    again = client.get(f"{NEW_CLAIM}?resume={token}", follow=True)
    assert again.redirect_chain == [(NEW_CLAIM, 302)]
    html = again.content.decode()
    assert "There is no draft of this form at that link" in text_of(html)
    assert "has expired or was already reopened" not in text_of(html)
    assert edit_form(html).data()["claim-statement"] == [""]


def test_a_source_page_with_a_gone_draft_saves_the_source_on_its_own(client):
    location, token = leave_for_a_new_source(client)
    FormDraft.objects.all().delete()
    page = client.get(location).content.decode()
    assert "There is no draft" in text_of(page)
    response = client.post(location, edit_form(page).data(NEW_SOURCE))
    assert response["Location"] == "/sources/SRC-VENDOR-2026-07/"


def test_an_expired_draft_is_not_reopened(client, monkeypatch):
    _, token = leave_for_a_new_source(client)
    later = timezone.now() + dt.timedelta(seconds=stash.DRAFT_SECONDS + 1)
    monkeypatch.setattr(stash, "_now", lambda: later)
    html = client.get(f"{NEW_CLAIM}?resume={token}", follow=True).content.decode()
    assert "There is no draft" in text_of(html)
    assert edit_form(html).data()["claim-statement"] == [""]


def test_a_draft_reopens_only_the_form_it_came_from_and_only_for_its_user(client, reviewer):
    _, token = leave_for_a_new_source(client)
    other = f"/cases/{CASE}/claims/CLM-CP22-003-A/edit/"
    html = client.get(f"{other}?resume={token}", follow=True).content.decode()
    assert "There is no draft" in text_of(html)
    assert TYPED["claim-statement"] not in html
    html = signed_in(reviewer).get(f"{NEW_CLAIM}?resume={token}", follow=True).content.decode()
    assert TYPED["claim-statement"] not in html


def test_a_user_keeps_a_bounded_number_of_drafts(client, analyst):
    tokens = [leave_for_a_new_source(client)[1] for _ in range(stash.DRAFT_LIMIT + 2)]
    kept = set(FormDraft.objects.filter(user=analyst).values_list("token", flat=True))
    assert kept == set(tokens[-stash.DRAFT_LIMIT :])
    html = client.get(NEW_CLAIM).content.decode()
    assert html.count("?resume=") == stash.DRAFTS_LISTED


# --- barred figures and rule links --------------------------------------------------------------


def test_the_attribution_form_lists_barred_figures_with_rule_links(client):
    html = client.get(ATTRIBUTIONS).content.decode()
    note = html.split('class="barred"', 1)[1].split("</section>", 1)[0]
    assert FIGURE in note
    assert f'<a href="/rules/{RULE}/">{RULE}</a>' in note
    option = re.search(rf'<option value="{FIGURE}">([^<]*)</option>', html).group(1)
    assert option.endswith(f"— barred by {RULE}")
    other = client.get("/cases/CP22-002/attributions/edit/").content.decode()
    assert 'class="barred"' not in other


def test_barred_figure_marks_take_a_fixed_number_of_queries(client, reviewer):
    client.get(ATTRIBUTIONS)  # the session is loaded once
    before = get_queries(client, ATTRIBUTIONS)
    figures = [
        {
            "id": f"FIG-CP99-001-N{n}",
            "value": n,
            "unit": "requests",
            "measure": "affected_requests",
            "scope": "production",
            "description": "",
            "claims": [],
        }
        for n in range(1, 4)
    ]
    record_create(kind="case", document=new_case(figures=figures), user=reviewer, summary="s")
    for figure in figures[:2]:
        rule = {
            "format": "claimsdb.rule/1",
            "key": f"RULE-{figure['id'].removeprefix('FIG-')}-NOT-CP22-003",
            "kind": "non_attribution",
            "status": "active",
            "figure": figure["id"],
            "case": CASE,
            "reason": "Another event.",
        }
        record_create(kind="rule", document=rule, user=reviewer, summary="s")
    html = client.get(ATTRIBUTIONS).content.decode()
    assert html.count("— barred by RULE-CP99-001-N") == 2 * rows_of(html, "attributions")
    assert get_queries(client, ATTRIBUTIONS) == before


def test_a_refusal_links_the_rule_that_refused_it(client):
    data = edit_form(client.get(ATTRIBUTIONS).content.decode()).data(
        {
            "attributions-0-figure": FIGURE,
            "attributions-0-role": "impact_basis",
            "summary": "Use the count",
        }
    )
    response = client.post(ATTRIBUTIONS, data)
    assert response.status_code == 422
    block = field_block(response.content.decode(), "attributions-0-figure")
    assert f'<a href="/rules/{RULE}/">{RULE}</a>' in block
    assert client.get(f"/rules/{RULE}/").status_code == 200


def test_rule_links_escape_the_rest_of_the_text():
    template = Template("{% load refusals %}{{ text|rule_links }}")
    html = template.render(Context({"text": "<b>x</b> rule RULE-A-NOT-B: why & how"}))
    assert html == (
        '&lt;b&gt;x&lt;/b&gt; rule <a href="/rules/RULE-A-NOT-B/">RULE-A-NOT-B</a>: why &amp; how'
    )


def test_a_viewer_can_neither_park_a_claim_form_nor_add_rows(seeded, viewer):
    client = signed_in(viewer)
    for button in ({"new_source": "0"}, {"add_row": "evidence"}):
        response = client.post(NEW_CLAIM, {**TYPED, **button})
        assert response.status_code == 403
    assert not FormDraft.objects.exists()


def test_adding_rows_stops_at_the_limit_without_dropping_any():
    def total(count: str) -> str:
        return with_blank_row(QueryDict(f"rows-TOTAL_FORMS={count}"), "rows")["rows-TOTAL_FORMS"]

    assert total("4") == "5"
    assert total(str(ROWS_MAX - 1)) == str(ROWS_MAX)
    assert total(str(ROWS_MAX)) == str(ROWS_MAX)
    assert total(str(ROWS_MAX + 50)) == str(ROWS_MAX + 50)
    assert total("x") == "x"
