"""What analysts and viewers do, in a real browser."""

from __future__ import annotations

import re

from claimsdb.models import Revision
from claimsdb.records import record_document
from tests.support import artifact, sign_in

CASE = "CP22-003"


def test_record_page_screenshot_desktop_and_phone(seeded_site, new_page):
    for width, name in ((1280, "record-page.png"), (390, "record-page-phone.png")):
        page = new_page(width=width)
        sign_in(page, seeded_site, "viewer")
        page.goto(f"{seeded_site}/cases/{CASE}/")
        assert page.locator("h1").inner_text().startswith("SGLang asynchronous RDMA transfers")
        # the stylesheet applied (no inline styles anywhere: it comes from the static file)
        assert page.evaluate("getComputedStyle(document.body).margin") == "0px"
        # nothing is wider than the screen
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=str(artifact(name)), full_page=True)
        assert page.csp_errors == []


def test_analyst_adds_a_claim_sees_it_and_meets_the_forbidden_attribution(seeded_site, new_page):
    # JavaScript off: every page works without it
    page = new_page(javascript=False)
    sign_in(page, seeded_site, "analyst")
    page.goto(f"{seeded_site}/cases/{CASE}/")
    page.get_by_role("link", name="Add a claim").click()
    page.wait_for_url(re.compile(r"/claims/new/$"))
    assert page.input_value("#id_claim-id") == "CLM-CP22-003-C"
    page.fill("#id_claim-statement", "Deferred release closes the window for the NIXL backend.")
    page.select_option("#id_claim-status", "supported")
    page.select_option("#id_claim-basis", "reported_finding")
    page.fill("#id_evidence-0-source", "SRC-SGLANG-PR-35360")
    page.select_option("#id_evidence-0-relation", "supports")
    page.fill("#id_evidence-0-locator", "PR description")
    page.fill("#id_summary", "Add the NIXL claim")
    page.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_url(re.compile(rf"/cases/{CASE}/#claims$"))

    claim = page.locator("#CLM-CP22-003-C")
    assert "Deferred release closes the window for the NIXL backend." in claim.inner_text()
    assert "sgl-project/sglang #35360" in claim.inner_text()
    assert "PR description" in claim.inner_text()
    assert "Saved as revision" in page.locator(".messages").inner_text()

    page.get_by_role("link", name="Full history, editorial changes included").click()
    assert "Add the NIXL claim" in page.locator(".timeline").inner_text()

    # the forbidden attribution: refused at the field, input kept, nothing written
    revisions = Revision.objects.count()
    page.goto(f"{seeded_site}/cases/{CASE}/attributions/edit/")
    page.fill("#id_attributions-0-figure", "FIG-CP22-002-RESPONSES")
    page.select_option("#id_attributions-0-role", "impact_basis")
    page.fill("#id_attributions-0-note", "the 155 responses")
    page.fill("#id_summary", "Use the production count")
    page.get_by_role("button", name="Save", exact=True).click()
    field = page.locator("#field-attributions-0-figure")
    assert "RULE-CP22-002-RESPONSES-NOT-CP22-003" in field.locator(".error").inner_text()
    assert "did not produce them" in field.inner_text()
    assert page.input_value("#id_attributions-0-figure") == "FIG-CP22-002-RESPONSES"
    assert page.input_value("#id_attributions-0-note") == "the 155 responses"
    assert page.input_value("#id_summary") == "Use the production count"
    assert "The change was refused" in page.locator(".refusal").inner_text()
    page.screenshot(path=str(artifact("refused-attribution.png")), full_page=True)
    assert Revision.objects.count() == revisions
    assert record_document("case", CASE)["attributions"] == []


def test_viewer_sees_no_edit_controls(seeded_site, new_page):
    page = new_page()
    sign_in(page, seeded_site, "viewer")
    page.goto(f"{seeded_site}/cases/{CASE}/")
    assert page.locator("a[href*='/edit/']").count() == 0
    assert page.locator("a[href*='/new/']").count() == 0
    assert page.locator(".edit-links").count() == 0
    assert page.locator("form[method=post]").count() == 1  # signing out only
    response = page.goto(f"{seeded_site}/cases/{CASE}/edit/")
    assert response.status == 403
    assert "Not allowed" in page.locator("h1").inner_text()


def test_stale_edit_shows_the_conflict_and_keeps_the_input(seeded_site, new_page):
    first, second = new_page(), new_page()
    sign_in(first, seeded_site, "analyst")
    sign_in(second, seeded_site, "reviewer")
    url = f"{seeded_site}/cases/{CASE}/edit/"
    first.goto(url)
    second.goto(url)

    first.fill("#id_case-title", "SGLang RDMA transfers could overwrite a reassigned cache")
    first.fill("#id_summary", "Shorter title")
    first.get_by_role("button", name="Save", exact=True).click()
    first.wait_for_url(f"{seeded_site}/cases/{CASE}/")

    second.fill("#id_case-limits", "My own limits, typed before the other save.")
    second.fill("#id_summary", "Rewrite the limits")
    second.get_by_role("button", name="Save", exact=True).click()
    conflict = second.locator(".conflict")
    assert "Someone else saved this record while you were editing" in conflict.inner_text()
    assert "Their" not in conflict.inner_text()  # the diff shows the words, not a label
    assert "reassigned" in conflict.locator("ins").first.inner_text()
    assert second.input_value("#id_case-limits") == "My own limits, typed before the other save."
    assert second.input_value("#id_summary") == "Rewrite the limits"
    second.screenshot(path=str(artifact("stale-edit-conflict.png")), full_page=True)
    document = record_document("case", CASE)
    assert document["title"] == "SGLang RDMA transfers could overwrite a reassigned cache"
    assert document["limits"].startswith("Field prevalence")

    # the title, untouched here, now shows the other change
    assert second.input_value("#id_case-title") == (
        "SGLang RDMA transfers could overwrite a reassigned cache"
    )
    # having seen the other change, saving again applies this one on top of it
    second.get_by_role("button", name="Save", exact=True).click()
    second.wait_for_url(f"{seeded_site}/cases/{CASE}/")
    document = record_document("case", CASE)
    assert document["limits"] == "My own limits, typed before the other save."
    assert document["title"] == "SGLang RDMA transfers could overwrite a reassigned cache"
