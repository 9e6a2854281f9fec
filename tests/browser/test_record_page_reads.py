"""The record page and its forms in a browser: the vocabulary where it is chosen and read,
withdrawing a claim with a reason, and each text said once."""

from __future__ import annotations

import re

from claimsdb.models import Revision
from tests.support import artifact, sign_in

CASE = "CP22-003"
CLAIM = "CLM-CP22-003-A"
SOURCE = "SRC-SGLANG-KV-TRANSFER-SAFETY"
NARRATIVE = "The SGLang team reproduces stale RDMA writes into recycled KV slots with two H200 GPUs"


def screenshot_between(page, top_locator, bottom_locator, name: str) -> None:
    """A screenshot of the page from the top of one element to the bottom of another."""
    top, bottom = top_locator.bounding_box(), bottom_locator.bounding_box()
    page.screenshot(
        path=str(artifact(name)),
        full_page=True,
        clip={
            "x": top["x"],
            "y": top["y"],
            "width": top["width"],
            "height": bottom["y"] + bottom["height"] - top["y"],
        },
    )


def test_assessment_form_shows_definitions_beside_values(seeded_site, new_page):
    page = new_page(javascript=False)
    sign_in(page, seeded_site, "analyst")
    page.goto(f"{seeded_site}/cases/{CASE}/assessments/1/edit/")
    setting = page.locator("#field-assessment-value_setting")
    row = setting.locator("li", has=page.locator("input[value=lab_only]"))
    assert row.locator(".choice-label").inner_text() == "lab only"
    assert row.locator(".definition").inner_text() == (
        "Seen only in a controlled test set-up, not shown against a real deployment."
    )
    # the definition sits beside its radio, on the same line
    radio_box = row.locator("input").bounding_box()
    definition_box = row.locator(".definition").bounding_box()
    assert definition_box["x"] > radio_box["x"]
    assert abs(definition_box["y"] - radio_box["y"]) < radio_box["height"] * 2
    assert setting.locator("input[value=research_demonstration]").is_checked()
    impact = page.locator("#field-assessment-impact")
    severe = impact.locator("li", has=page.locator("input[value='4']"))
    assert "4 — severe" in severe.inner_text()
    assert "Severe harm at scale" in severe.locator(".definition").inner_text()
    # choosing by the label works without JavaScript
    page.click("label[for=id_assessment-value_setting_2]")
    assert setting.locator("input[value=lab_only]").is_checked()
    page.locator("fieldset.dimensions").screenshot(path=str(artifact("assessment-form.png")))


def test_record_page_shows_control_and_unknown_kinds(seeded_site, new_page):
    page = new_page()
    sign_in(page, seeded_site, "viewer")
    page.goto(f"{seeded_site}/cases/{CASE}/")
    controls = page.locator("#controls")
    assert controls.locator("ul.items .kind-mitigation").inner_text() == "mitigation"
    assert "lowers the likelihood or the harm" in controls.locator("dl.legend").inner_text()
    unknowns = page.locator("#unknowns")
    assert unknowns.locator("ul.items .kind-unknown").count() == 2
    assert "not established by the evidence" in unknowns.locator("dl.legend").inner_text()
    assert unknowns.locator("dl.legend").is_visible()
    screenshot_between(page, controls, unknowns, "record-vocabulary.png")


def test_withdrawing_a_claim_asks_for_a_reason_and_shows_it(seeded_site, new_page):
    page = new_page(javascript=False)
    sign_in(page, seeded_site, "analyst")
    page.goto(f"{seeded_site}/cases/{CASE}/")
    page.locator(f"#{CLAIM}").get_by_role("link", name="Withdraw").click()
    # a blank reason is refused at the field, and what was typed stays
    page.fill("#id_withdraw-reason", "   ")
    page.fill("#id_summary", "Withdraw A: retracted")
    page.click("button.primary")
    reason_field = page.locator("#field-withdraw-reason")
    assert "Say why the claim is withdrawn." in reason_field.locator(".error").inner_text()
    assert page.input_value("#id_summary") == "Withdraw A: retracted"
    # with a reason it is withdrawn, dated by its revision
    page.fill("#id_withdraw-reason", "The report's figure was retracted by its authors.")
    page.click("button.primary")
    page.goto(f"{seeded_site}/cases/{CASE}/")
    when = Revision.objects.filter(record_key=CASE).latest("number").created_at
    card = page.locator(f"#{CLAIM}")
    assert card.locator(".withdrawal").inner_text() == (
        f"Withdrawn on {when:%b} {when.day}, {when.year}: "
        "The report's figure was retracted by its authors."
    )
    card.screenshot(path=str(artifact("claim-withdrawn.png")))
    # the source's Cited by list marks it; counts leave it out
    page.goto(f"{seeded_site}/sources/{SOURCE}/")
    cited = page.locator("li", has=page.locator(f"a[href$='#{CLAIM}']"))
    assert cited.get_attribute("class") == "withdrawn"
    assert cited.locator(".badge").inner_text() == "withdrawn"
    page.goto(f"{seeded_site}/sources/")
    assert "cited by 3 evidence links" in page.locator("main").inner_text()
    page.goto(f"{seeded_site}/cases/")
    row = page.locator("li", has=page.locator(f"a[href='/cases/{CASE}/']")).first
    assert re.search(r"\b2 claims\b", row.inner_text())


def test_record_page_shows_the_repeated_paragraph_once(seeded_site, new_page):
    page = new_page()
    sign_in(page, seeded_site, "viewer")
    page.goto(f"{seeded_site}/cases/{CASE}/")
    article = page.locator("article.record").inner_text()
    assert article.count(NARRATIVE) == 1
    assert article.count("Impact is left ungraded because a calibrated 0-to-4 impact basis") == 1
    basis = page.locator("#basis").inner_text()
    assert "Same as the assessor's narrative and the reason the impact is ungraded, above." in basis
    # the narrative the note points at is open to read
    assert page.locator("details.narrative .prose").is_visible()
    screenshot_between(
        page, page.locator("#assessment"), page.locator("#basis"), "record-read-once.png"
    )
