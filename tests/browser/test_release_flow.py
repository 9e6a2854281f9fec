"""From a proposal to a published release, in a real browser: an analyst proposes a case
(in review; ready is not theirs to set), a reviewer sets it ready, another approves it, the
first previews the release, meets the notes refusal, and publishes."""

from __future__ import annotations

from django.contrib.auth.models import User

from claimsdb.models import Release
from claimsdb.records import record_document
from tests.support import approve_all, artifact, publish, sign_in

CASE = "CP22-002"
TITLE = "Cloudflare rejected requests reached users as empty responses"


def test_a_case_goes_from_proposal_to_release(seeded_site, new_page):
    publish(User.objects.get(username="reviewer"), notes="The seed")

    # the analyst edits the released case and proposes it for the next release
    analyst = new_page(javascript=False)
    sign_in(analyst, seeded_site, "analyst")
    analyst.goto(f"{seeded_site}/cases/{CASE}/edit/")
    analyst.fill("#id_case-title", TITLE)
    analyst.select_option("#id_case-status", "in_review")
    analyst.fill("#id_summary", "Retitle and propose for release")
    analyst.get_by_role("button", name="Save", exact=True).click()
    analyst.wait_for_url(f"{seeded_site}/cases/{CASE}/")
    assert record_document("case", CASE)["status"] == "in_review"
    # ready is shown but not offered to the analyst
    analyst.goto(f"{seeded_site}/cases/{CASE}/edit/")
    ready = analyst.locator("#id_case-status option[value=ready]")
    assert ready.is_disabled() and ready.inner_text() == "ready (set by a reviewer)"
    assert not analyst.locator("#id_case-status option[value=in_review]").is_disabled()

    # the analyst's citation of the unreleased revision says its link is not public yet
    analyst.goto(f"{seeded_site}/cases/{CASE}/")
    cite = analyst.locator(".cite .unreleased")
    assert "not in a release yet" in cite.inner_text()
    assert "works only for signed-in users" in cite.inner_text()
    assert cite.locator("a", has_text="release 1").count() == 1

    # the reviewer sets it ready
    reviewer = new_page()
    sign_in(reviewer, seeded_site, "reviewer")
    reviewer.goto(f"{seeded_site}/cases/{CASE}/edit/")
    assert not reviewer.locator("#id_case-status option[value=ready]").is_disabled()
    reviewer.select_option("#id_case-status", "ready")
    reviewer.fill("#id_summary", "Reviewed: ready")
    reviewer.get_by_role("button", name="Save", exact=True).click()
    reviewer.wait_for_url(f"{seeded_site}/cases/{CASE}/")
    assert record_document("case", CASE)["status"] == "ready"
    # a second reviewer approves the changes (four eyes: docs/review.md)
    approve_all()

    # the preview lists the case with its title and a diff against release 1
    reviewer.goto(f"{seeded_site}/releases/new/")
    row = reviewer.locator("tbody tr", has_text=CASE)
    assert TITLE in row.inner_text()
    diff = row.locator("a", has_text="diff revision")
    assert f"/cases/{CASE}/diff/" in diff.get_attribute("href")
    reviewer.screenshot(path=str(artifact("release-preview.png")), full_page=True)
    diff.click()
    assert TITLE in reviewer.content()
    reviewer.go_back()

    # empty notes: refused at the notes field
    reviewer.fill("#id_notes", "   ")
    reviewer.get_by_role("button", name="Publish release 2").click()
    field = reviewer.locator("#field-notes")
    assert "a release needs notes" in field.locator(".error").inner_text()
    assert Release.objects.count() == 1
    field.scroll_into_view_if_needed()
    reviewer.screenshot(path=str(artifact("release-notes-refused.png")), full_page=True)

    # notes given: published
    reviewer.fill("#id_notes", f"{CASE} retitled after review.")
    reviewer.get_by_role("button", name="Publish release 2").click()
    reviewer.wait_for_url(f"{seeded_site}/releases/2/")
    assert TITLE in reviewer.locator("tbody").inner_text()
    assert reviewer.csp_errors == [] and analyst.csp_errors == []
