"""History that says what changed: each line names its revision, action, summary, author,
changed fields and dates; the public history stands under its releases."""

from __future__ import annotations

from claimsdb.models import Revision
from claimsdb.records import record_document
from tests.support import artifact, publish, sign_in

CASE = "CP22-003"


def _edit_and_release(seeded_site) -> tuple[int, int]:
    """Release 1 of the seed, then an analyst's edit of CP22-003 published as release 2."""
    from django.contrib.auth import get_user_model

    from claimsdb.services import case_update

    users = get_user_model().objects
    created = Revision.objects.get(record_kind="case", record_key=CASE).number
    publish(users.get(username="reviewer"), notes="The seed")
    document = record_document("case", CASE)
    document["claims"][0]["statement"] += " (as reported upstream)"
    document["scope_note"] += " Claim A follows the report."
    edited = case_update(
        user=users.get(username="analyst"), key=CASE, document=document, summary="Align claim A"
    ).revision.number
    publish(users.get(username="reviewer"), notes="Claim A aligned")
    return created, edited


def _list_style(page, selector: str) -> str:
    return page.locator(selector).first.evaluate("e => getComputedStyle(e).listStyleType")


def test_record_history_says_what_each_revision_changed(seeded_site, new_page):
    created, edited = _edit_and_release(seeded_site)
    page = new_page()
    sign_in(page, seeded_site, "viewer")
    page.goto(f"{seeded_site}/cases/{CASE}/")
    history = page.locator("#history")
    text = history.inner_text()
    assert "Canonical change recorded" not in text
    line = history.locator(".revision-line").first
    assert line.locator(".revision-head").inner_text().startswith(f"Revision {edited}")
    assert line.locator(".badge").first.inner_text() == "update"
    assert line.locator(".summary").inner_text() == "Align claim A"
    assert line.locator(".author").inner_text() == "by analyst"
    assert line.locator(".changed").inner_text() == (
        "Changed: claims[CLM-CP22-003-A].statement, scope_note"
    )
    seed_line = history.locator(".revision-line").last
    assert seed_line.locator(".summary").inner_text() == "Seed"
    assert "record dated Oct 28, 2026" in seed_line.locator(".when").inner_text()
    # no list counter: the revision number is the only number
    assert _list_style(page, "#history ul.history") == "none"
    assert history.locator("ol").count() == 0
    history.screenshot(path=str(artifact("history-record.png")))

    page.get_by_role("link", name="Full history, editorial changes included").click()
    timeline = page.locator("ul.history")
    assert _list_style(page, "ul.history") == "none"
    assert page.locator("main ol").count() == 0
    first = timeline.locator(".revision-line").first
    assert "Changed: claims[CLM-CP22-003-A].statement, scope_note" in first.inner_text()
    assert "by analyst" in first.inner_text()
    assert f"Revision {created}" in timeline.inner_text()
    assert page.csp_errors == []


def test_public_history_is_grouped_by_release(seeded_site, new_page):
    created, edited = _edit_and_release(seeded_site)
    page = new_page(javascript=False)
    page.goto(f"{seeded_site}/cases/{CASE}/history/")
    headings = page.locator("main .release-heading")
    assert headings.count() == 2
    assert headings.nth(0).inner_text().startswith("Release 2 · published ")
    assert headings.nth(1).inner_text().startswith("Release 1 · published ")
    groups = page.locator("main .release-group")
    newest = groups.nth(0).locator(".revision-line")
    assert newest.count() == 1
    assert newest.first.inner_text().startswith(f"Revision {edited} · update · Align claim A")
    assert "Changed: claims[CLM-CP22-003-A].statement, scope_note" in newest.first.inner_text()
    seed = groups.nth(1).locator(".revision-line")
    assert seed.first.inner_text().startswith(f"Revision {created} · create · Seed")
    assert "record dated Oct 28, 2026" in seed.first.inner_text()
    # authors are for signed-in readers; who reviewed a released revision is public
    # (docs/review.md), on its own line
    assert page.locator("main .author").count() == 0
    main_text = page.locator("main").inner_text()
    assert main_text.count("reviewed by approver") == page.locator("main p.review").count() > 0
    assert "by " not in main_text.replace("reviewed by approver", "")
    assert "Canonical change recorded" not in page.locator("main").inner_text()
    assert _list_style(page, "main ul.history") == "none"
    assert page.locator("main ol").count() == 0
    page.screenshot(path=str(artifact("history-public.png")), full_page=True)
    headings.nth(1).get_by_role("link", name="Release 1").click()
    page.wait_for_url(f"{seeded_site}/releases/1/")

    # the record page's public history has the same release headings
    page.goto(f"{seeded_site}/cases/{CASE}/")
    record = page.locator("#history .release-heading")
    assert [record.nth(i).inner_text().split(" · ")[0] for i in range(2)] == [
        "Release 2",
        "Release 1",
    ]
