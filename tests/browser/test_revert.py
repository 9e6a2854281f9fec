"""A reviewer reverts an analyst's edits, seeing what the revert does before confirming it."""

from __future__ import annotations

import re

from claimsdb.models import Revision
from claimsdb.records import record_document
from tests.support import add_claim, artifact, sign_in

CASE = "CP22-003"
NEW_CLAIM = "CLM-CP22-003-C"


def edit_status(page, base: str, status: str, summary: str) -> None:
    page.goto(f"{base}/cases/{CASE}/edit/")
    page.select_option("#id_case-status", status)
    page.fill("#id_summary", summary)
    page.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_url(f"{base}/cases/{CASE}/")


def change_row(page, op: str, path: str):
    """The row of a diff table for one changed field path."""
    return page.locator(f"tr.op-{op}", has=page.locator(f"code.path:text-is('{path}')"))


def latest_number() -> int:
    return Revision.objects.filter(record_key=CASE).latest("number").number


def test_reviewer_previews_a_revert_in_words_then_confirms_it(seeded_site, new_page):
    # the analyst: back to draft while checking, then ready again with a new claim
    analyst = new_page(javascript=False)
    sign_in(analyst, seeded_site, "analyst")
    page = new_page(javascript=False)
    sign_in(page, seeded_site, "reviewer")
    edit_status(analyst, seeded_site, "draft", "Back to draft while checking")
    draft = latest_number()
    edit_status(page, seeded_site, "ready", "Checked: ready")  # only a reviewer sets ready
    add_claim(analyst, seeded_site, CASE, "Deferred release closes the window for NIXL.",
              "Add the NIXL claim")  # fmt: skip
    added = latest_number()

    # the reviewer, JavaScript off: history → revert link → preview → confirm
    page.goto(f"{seeded_site}/cases/{CASE}/history/")
    page.get_by_role("link", name=f"Revert to revision {draft}…").click()
    page.wait_for_url(re.compile(rf"/revisions/{draft}/revert/$"))
    effects = page.locator(".revert-effects").inner_text()
    assert "This revert moves the case from ready back to draft." in effects
    assert f"It removes 1 claim: {NEW_CLAIM}." in effects
    assert page.input_value("#id_summary") == f"Revert to revision {draft}"
    assert page.is_checked("#id_material")
    # the claim that goes is shown as its fields, its evidence link as a row of its own
    removed = change_row(page, "removed", f"claims[{NEW_CLAIM}]")
    assert "Deferred release closes the window for NIXL." in removed.inner_text()
    assert "PR description" in removed.inner_text()
    assert "{" not in removed.inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.screenshot(path=str(artifact("revert-preview.png")), full_page=True)
    assert latest_number() == added  # nothing written by looking
    phone = new_page(width=390, javascript=False)
    sign_in(phone, seeded_site, "reviewer")
    phone.goto(page.url)
    assert "from ready back to draft" in phone.locator(".revert-effects").inner_text()
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    phone.screenshot(path=str(artifact("revert-preview-phone.png")), full_page=True)

    page.fill("#id_summary", "Not ready: the NIXL claim needs a second source")
    page.get_by_role("button", name=f"Revert to revision {draft}").click()
    page.wait_for_url(f"{seeded_site}/cases/{CASE}/")
    assert (
        f"Reverted to revision {draft} as revision {added + 1}."
        in page.locator(".messages").inner_text()
    )
    assert page.locator(f"#{NEW_CLAIM}").count() == 0
    document = record_document("case", CASE)
    assert document["status"] == "draft"
    revision = Revision.objects.get(number=added + 1)
    assert (revision.action, revision.summary) == (
        "revert",
        "Not ready: the NIXL claim needs a second source",
    )
    assert page.csp_errors == []


def test_diff_shows_an_added_claim_as_a_field_table(seeded_site, new_page):
    page = new_page()
    sign_in(page, seeded_site, "analyst")
    before = latest_number()
    add_claim(page, seeded_site, CASE, "Deferred release closes the window for NIXL.",
              "Add the NIXL claim")  # fmt: skip
    page.goto(f"{seeded_site}/cases/{CASE}/history/")
    page.get_by_role("link", name=f"Changes from revision {before}").click()
    added = change_row(page, "added", f"claims[{NEW_CLAIM}]")
    fields = added.locator(".value-fields").first
    row = fields.locator("tr", has=page.locator("th:text-is('Statement')"))
    assert row.locator("td").inner_text() == "Deferred release closes the window for NIXL."
    evidence = fields.locator("tr", has=page.locator("th:text-is('Evidence')")).first
    assert "SRC-SGLANG-PR-35360" in evidence.inner_text()
    assert "{" not in added.inner_text() and added.locator("pre").count() == 0
    added.screenshot(path=str(artifact("diff-fields.png")))
    assert page.csp_errors == []
