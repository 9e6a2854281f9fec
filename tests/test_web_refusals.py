"""Refusals of relations and attributions, in place and whole."""

from __future__ import annotations

from claimsdb.services import record_create

from .support import field_block, new_case, signed_in, submit, text_of

NEW = "CP99-001"


def _two_rules_bridged_by_one_relation(reviewer):
    """A new case with a figure, and two rules that a same_event relation between it and
    CP22-002 would both break."""
    figure = {
        "id": "FIG-CP99-001-USERS",
        "value": 1.2,
        "unit": "%",
        "measure": "share_of_users",
        "scope": "production",
        "description": "",
        "claims": [],
    }
    record_create(user=reviewer, kind="case", document=new_case(NEW, figures=[figure]), summary="N")
    for key, figure_id, case in (
        ("RULE-CP22-002-RESPONSES-NOT-CP99-001", "FIG-CP22-002-RESPONSES", NEW),
        ("RULE-CP99-001-USERS-NOT-CP22-002", "FIG-CP99-001-USERS", "CP22-002"),
    ):
        record_create(
            user=reviewer,
            kind="rule",
            document={
                "format": "claimsdb.rule/1",
                "key": key,
                "kind": "non_attribution",
                "status": "active",
                "figure": figure_id,
                "case": case,
                "reason": "Another event.",
            },
            summary="Rule",
        )


def test_a_relation_refused_by_two_rules_names_both_at_its_row(seeded, reviewer):
    _two_rules_bridged_by_one_relation(reviewer)
    client = signed_in(reviewer)
    response = submit(
        client,
        f"/cases/{NEW}/relations/edit/",
        {
            "relations-0-case": "CP22-002",
            "relations-0-kind": "same_event",
            "summary": "Same event",
        },
    )
    assert response.status_code == 422
    html = response.content.decode()

    row = text_of(field_block(html, "relations-0-kind"))
    assert "RULE-CP22-002-RESPONSES-NOT-CP99-001" in row
    assert "RULE-CP99-001-USERS-NOT-CP22-002" in row
    top = html.split('class="refusal"', 1)[1].split("</section>", 1)[0]
    assert "RULE-" not in top  # said at the row, not again at the top
    # the vocabulary is shown as code, as it is written
    assert "<code>same_event</code>" in field_block(html, "relations-0-kind")


def test_a_refusal_at_the_top_is_not_styled_as_a_flash_message():
    from pathlib import Path

    css = (Path(__file__).parent.parent / "claimsdb/static/claimsdb/site.css").read_text()
    # the flash style (a padded, bordered box) is for flash messages only: on the inline
    # message of a refusal it is drawn once per wrapped line, each line covering the last
    assert "\n.message {" not in css and ".messages .message {" in css


def test_the_attributions_page_marks_figures_of_other_events(seeded, reviewer):
    from claimsdb.services import record_create

    # a figure of a case that is not of CP22-003's event, and barred by no rule
    other = {
        "id": "FIG-CP99-001-USERS",
        "value": 1.2,
        "unit": "%",
        "measure": "share_of_users",
        "scope": "production",
        "description": "",
        "claims": [],
    }
    record_create(user=reviewer, kind="case", document=new_case(NEW, figures=[other]), summary="N")
    html = signed_in(reviewer).get("/cases/CP22-003/attributions/edit/").content.decode()
    # a datalist hides a disabled option: the figure is offered, marked, and refused on save
    option = html.split('value="FIG-CP99-001-USERS"', 1)[1].split("</option>", 1)[0]
    assert option.endswith("— another event: not attributable to this case")
    assert "a figure of another event" in text_of(html)
    # the barred figure is still marked with its rule, and can be chosen (to be refused)
    barred = html.split('value="FIG-CP22-002-RESPONSES"', 1)[1].split("</option>", 1)[0]
    assert "barred by RULE-CP22-002-RESPONSES-NOT-CP22-003" in barred
    assert "disabled" not in barred


def test_a_key_refusal_says_the_pattern_in_words_with_an_example(seeded, analyst):
    response = submit(
        signed_in(analyst),
        "/sources/new/",
        {"source-key": "src-openai postmortem", "source-title": "Postmortem", "summary": "New"},
    )
    assert response.status_code == 422
    block = text_of(field_block(response.content.decode(), "source-key"))
    assert "SRC- then capital letters and digits" in block
    assert "e.g. SRC-" in block
    assert "^SRC-" not in block and "[A-Z0-9]" not in block


def test_every_key_and_id_pattern_has_words():
    from claimsdb import choices
    from claimsdb.records.schema import CASE, FIGURE

    patterns = [v for k, v in vars(choices).items() if k.endswith("_PATTERN")]
    assert set(patterns) <= set(choices.PATTERN_WORDS)
    assert CASE.fields["key"].description.startswith("a case key")
    assert FIGURE.fields["id"].description.startswith("a figure ID")


def test_a_new_case_and_a_new_figure_get_a_suggested_key(seeded, analyst):
    client = signed_in(analyst)
    html = client.get("/cases/new/").content.decode()
    assert 'name="case-key"' in html and 'value="CP22-004"' in html
    url = "/cases/CP22-003/figures/edit/"
    html = client.get(url).content.decode()
    assert 'value="FIG-CP22-003-A"' in html
    # a blank row left as offered is still blank: saving adds no figure
    from .support import revision_count

    before = revision_count()
    submit(client, url, {"summary": "Nothing"})
    assert revision_count() == before


def test_the_relations_form_defines_every_kind(seeded, analyst):
    from claimsdb import choices

    html = signed_in(analyst).get("/cases/CP22-003/relations/edit/").content.decode()
    legend = text_of(html.split('class="legend"', 1)[1].split("</dl>", 1)[0])
    for _kind, label in choices.RelationKind.choices:
        assert label in legend
    assert "figures may be attributed between the two cases" in legend
