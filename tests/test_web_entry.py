"""Entering a case in fewer pages: "Save and add another" on the source and rule forms, and
the case's figures, relations, controls and unknowns edited on one page as one revision."""

from __future__ import annotations

import pytest

from claimsdb.records import record_document

from .support import edit_form, field_block, revision_count, signed_in, text_of

CASE = "CP22-003"
LISTS = f"/cases/{CASE}/lists/edit/"


@pytest.fixture
def client(seeded, reviewer):
    return signed_in(reviewer)


def test_save_and_add_another_source_opens_an_empty_source_form(client):
    form = edit_form(client.get("/sources/new/").content.decode())
    assert ("save_add", "1", "") in form.buttons
    data = form.data(
        {
            "source-key": "SRC-VENDOR-2026-08",
            "source-title": "Another advisory",
            "source-kind": "vendor_advisory",
            "summary": "New source",
        }
    )
    response = client.post("/sources/new/", {**data, "save_add": "1"})
    assert response.status_code == 302 and response["Location"] == "/sources/new/"
    assert record_document("source", "SRC-VENDOR-2026-08")["title"] == "Another advisory"
    # a plain save still leads to the source
    response = client.post("/sources/new/", {**data, "source-key": "SRC-VENDOR-2026-09"})
    assert response["Location"] == "/sources/SRC-VENDOR-2026-09/"


def test_save_and_add_another_rule_opens_an_empty_rule_form(client):
    form = edit_form(client.get("/rules/new/").content.decode())
    data = form.data(
        {
            "rule-key": "RULE-CP22-002-RESPONSES-NEVER-CP22-003",
            "rule-figure": "FIG-CP22-002-RESPONSES",
            "rule-case": "CP22-003",
            "rule-reason": "Another event.",
            "summary": "New rule",
        }
    )
    response = client.post("/rules/new/", {**data, "save_add": "1"})
    assert response.status_code == 302, text_of(response.content.decode())[:2000]
    assert response["Location"] == "/rules/new/"


def test_edit_pages_of_one_record_offer_no_save_and_add(client):
    form = edit_form(client.get(f"/cases/{CASE}/edit/").content.decode())
    assert not any(name == "save_add" for name, _, _ in form.buttons)


def test_four_lists_are_saved_together_as_one_revision(client):
    before = revision_count()
    document = record_document("case", CASE)
    html = client.get(f"{LISTS}?blank=4").content.decode()
    data = edit_form(html).data()
    for name in ("figures", "relations", "controls", "unknowns"):
        blank = int(data[f"{name}-TOTAL_FORMS"][0]) - int(data[f"{name}-INITIAL_FORMS"][0])
        assert blank == 4, name
    base = {name: len(document[name]) for name in ("controls", "unknowns")}
    changes = {"summary": "Two controls, four unknowns"}
    for i in range(2):
        changes[f"controls-{base['controls'] + i}-kind"] = "mitigation"
        changes[f"controls-{base['controls'] + i}-text"] = f"Control {i}"
    for i in range(4):
        changes[f"unknowns-{base['unknowns'] + i}-kind"] = "open_question"
        changes[f"unknowns-{base['unknowns'] + i}-text"] = f"Unknown {i}"
    response = client.post(LISTS, edit_form(html).data(changes))
    assert response.status_code == 302, text_of(response.content.decode())[:3000]
    assert revision_count() == before + 1
    after = record_document("case", CASE)
    assert [c["text"] for c in after["controls"][base["controls"] :]] == ["Control 0", "Control 1"]
    assert [u["text"] for u in after["unknowns"][base["unknowns"] :]] == [
        f"Unknown {i}" for i in range(4)
    ]
    assert after["figures"] == document["figures"] and after["relations"] == document["relations"]


def test_a_refusal_on_the_lists_page_is_shown_at_its_row_and_keeps_every_list(client):
    before = revision_count()
    html = client.get(LISTS).content.decode()
    document = record_document("case", CASE)
    n = len(document["figures"])
    changes = {
        f"figures-{n}-id": "FIG-CP22-002-RESPONSES",  # another case's figure ID
        f"figures-{n}-value": "3",
        f"figures-{n}-unit": "h",
        f"figures-{n}-measure": "window",
        f"figures-{n}-scope": "production",
        f"unknowns-{len(document['unknowns'])}-kind": "open_question",
        f"unknowns-{len(document['unknowns'])}-text": "Kept after a refusal",
        "summary": "A duplicate figure ID",
    }
    response = client.post(LISTS, edit_form(html).data(changes))
    assert response.status_code == 422
    assert revision_count() == before
    page = response.content.decode()
    kept = edit_form(page).data()
    assert kept[f"unknowns-{len(document['unknowns'])}-text"] == ["Kept after a refusal"]
    assert 'class="error"' in field_block(page, f"figures-{n}-id")
