"""Editing forms in a real browser with JavaScript off: a new source created from the claim
form, rows added without scripts, and a barred figure marked before and after the save."""

from __future__ import annotations

import re

from claimsdb.models import Revision
from claimsdb.records import record_document
from tests.support import artifact, sign_in

CASE = "CP22-003"
RULE = "RULE-CP22-002-RESPONSES-NOT-CP22-003"
FIGURE = "FIG-CP22-002-RESPONSES"
STATEMENT = "Deferred release closes the window for the NIXL backend."


def open_new_claim(page, site):
    page.goto(f"{site}/cases/{CASE}/claims/new/")
    page.fill("#id_claim-statement", STATEMENT)
    page.select_option("#id_claim-status", "supported")
    page.select_option("#id_claim-basis", "reported_finding")
    page.fill("#id_claim-status_note", "typed before leaving")


def test_a_new_source_from_the_claim_form_comes_back_chosen(seeded_site, new_page):
    page = new_page(javascript=False)
    sign_in(page, seeded_site, "analyst")
    open_new_claim(page, seeded_site)
    page.fill("#id_evidence-0-source", "SRC-SGLANG-PR-35360")
    page.select_option("#id_evidence-0-relation", "supports")
    page.fill("#id_evidence-1-locator", "Advisory, section 2")
    page.locator("#evidence-row-1").get_by_role("button", name="Create a new source…").click()
    page.wait_for_url(re.compile(r"/sources/new/\?return="))
    assert "takes you back" in page.locator(".returns").inner_text()

    page.fill("#id_source-key", "SRC-VENDOR-2026-07")
    page.fill("#id_source-title", "Vendor advisory on KV transfers")
    page.select_option("#id_source-kind", "vendor_advisory")
    page.fill("#id_summary", "New source for the NIXL claim")
    page.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_url(re.compile(rf"/cases/{CASE}/claims/new/\?resume="))

    # everything typed is back, the new source chosen in the row that asked for it
    assert page.input_value("#id_claim-statement") == STATEMENT
    assert page.input_value("#id_claim-status_note") == "typed before leaving"
    assert page.input_value("#id_evidence-0-source") == "SRC-SGLANG-PR-35360"
    assert page.input_value("#id_evidence-1-source") == "SRC-VENDOR-2026-07"
    assert page.input_value("#id_evidence-1-locator") == "Advisory, section 2"
    assert "SRC-VENDOR-2026-07 is chosen" in page.locator(".messages").inner_text()
    page.screenshot(path=str(artifact("forms-new-source-return.png")), full_page=True)
    assert Revision.objects.filter(record_kind="source", record_key="SRC-VENDOR-2026-07").exists()

    page.select_option("#id_evidence-1-relation", "context")
    page.fill("#id_summary", "Add the NIXL claim")
    page.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_url(re.compile(rf"/cases/{CASE}/#claims$"))
    claim = record_document("case", CASE)["claims"][-1]
    assert claim["statement"] == STATEMENT
    assert [link["source"] for link in claim["evidence"]] == [
        "SRC-SGLANG-PR-35360",
        "SRC-VENDOR-2026-07",
    ]
    assert page.csp_errors == []


def test_add_another_row_three_times_then_save_three_links(seeded_site, new_page):
    page = new_page(javascript=False)
    sign_in(page, seeded_site, "analyst")
    open_new_claim(page, seeded_site)
    revisions = Revision.objects.count()
    assert page.locator("#evidence .rows > fieldset.row").count() == 2
    for _ in range(3):
        page.get_by_role("button", name="Add another row").click()
        page.wait_for_load_state()
    assert page.locator("#evidence .rows > fieldset.row").count() == 5
    assert page.input_value("#id_claim-statement") == STATEMENT  # kept through each re-render
    assert Revision.objects.count() == revisions  # nothing written
    sources = ["SRC-SGLANG-PR-35360", "SRC-SGLANG-PR-35049", "SRC-SGLANG-ISSUE-24527"]
    for row, source in enumerate(sources):
        page.fill(f"#id_evidence-{row}-source", source)
        page.select_option(f"#id_evidence-{row}-relation", "supports")
    page.fill("#id_summary", "A claim with three links")
    page.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_url(re.compile(rf"/cases/{CASE}/#claims$"))
    claim = record_document("case", CASE)["claims"][-1]
    assert [link["source"] for link in claim["evidence"]] == sources


def boxes(page) -> dict[str, dict[str, float]]:
    """The first row and its controls; the controls measured from the row's top left."""
    row = page.locator("#attributions-row-0").bounding_box()
    found = {"row": {"x": row["x"], "width": row["width"]}}
    for name in ("figure", "role", "note"):
        box = page.locator(f"#id_attributions-0-{name}").bounding_box()
        found[name] = {
            "x": box["x"] - row["x"],
            "y": box["y"] - row["y"],
            "width": box["width"],
            "height": box["height"],
        }
    return found


def test_a_barred_figure_is_marked_and_its_refusal_links_the_rule(seeded_site, new_page):
    page = new_page(javascript=False)
    sign_in(page, seeded_site, "analyst")
    page.goto(f"{seeded_site}/cases/{CASE}/attributions/edit/")
    option = page.locator(f'#id_attributions-0-figure-suggestions option[value="{FIGURE}"]')
    assert option.inner_text().endswith(f"— barred by {RULE}")
    note = page.locator("section.barred")
    assert note.get_by_role("link", name=RULE).get_attribute("href") == f"/rules/{RULE}/"
    page.fill("#id_attributions-0-figure", FIGURE)
    page.select_option("#id_attributions-0-role", "impact_basis")
    page.fill("#id_attributions-0-note", "the 155 responses")
    page.fill("#id_summary", "Use the production count")
    before = boxes(page)
    page.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_load_state()

    error = page.locator("#field-attributions-0-figure .error")
    assert "did not produce them" in error.inner_text()
    link = error.get_by_role("link", name=RULE)
    assert link.get_attribute("href") == f"/rules/{RULE}/"
    assert page.input_value("#id_attributions-0-figure") == FIGURE
    # the refused row keeps its layout: same width, each control where and as large as before
    # (the figure has a line of its own, so the refusal under it moves the next line down)
    after = boxes(page)
    assert after["row"] == before["row"] and after["figure"] == before["figure"]
    for name in ("role", "note"):
        assert {k: v for k, v in after[name].items() if k != "y"} == {
            k: v for k, v in before[name].items() if k != "y"
        }
    page.screenshot(path=str(artifact("forms-barred-figure.png")), full_page=True)
    link.click()
    page.wait_for_url(re.compile(rf"/rules/{RULE}/$"))
    assert record_document("case", CASE)["attributions"] == []
    assert page.csp_errors == []
