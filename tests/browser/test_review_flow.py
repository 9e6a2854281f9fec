"""The analyst's day under four eyes, in a real browser: an analyst edits a ready,
released case (its lede, its limits, a new claim, a locator); reviewer B edits it too; the
next release publishes none of it; reviewer A asks for a change at the limits, which the
analyst sees at that field and makes; reviewer B may not approve (the range holds their
change); reviewer A, who wrote nothing, approves; the release after publishes exactly the
approved revision."""

from __future__ import annotations

from django.contrib.auth.models import User

from claimsdb.models import Approval, ReleaseEntry, ReviewComment
from claimsdb.records import record_document
from claimsdb.services.approvals import approve, approve_pending
from claimsdb.services.releases import release_publish
from tests.support import add_claim, artifact, create_source, latest, make_user, sign_in

CASE = "CP22-003"
CLAIM = "CLM-CP22-003-A"


def published(release_number: int) -> int:
    """The revision of the case a release publishes."""
    return ReleaseEntry.objects.get(
        release__number=release_number, record_kind="case", record_key=CASE
    ).revision.number


def save(page, summary: str) -> None:
    page.fill("#id_summary", summary)
    page.get_by_role("button", name="Save", exact=True).click()


def test_nothing_unreviewed_reaches_the_public_record(seeded_site, new_page):
    make_user("reviewer-a", "reviewer")
    make_user("reviewer-b", "reviewer")
    # the seed, reviewed and released
    approve_pending(user=make_user("seed-approver", "reviewer"), note="the seed")
    release = release_publish(user=User.objects.get(username="reviewer"), notes="The seed")
    released = published(release.number)
    assert released == latest("case", CASE)

    # the analyst's edits: lede and limits, a claim, a locator; the page warns of nothing,
    # but the record now says it waits for review
    analyst = new_page(javascript=False)
    sign_in(analyst, seeded_site, "analyst")
    analyst.goto(f"{seeded_site}/cases/{CASE}/edit/")
    analyst.fill(
        "#id_case-summary",
        "SGLang's asynchronous RDMA transfers could overwrite a reassigned cache slot.",
    )
    analyst.fill("#id_case-limits", "Reproduced on one lab cluster only.")
    save(analyst, "Sharper lede and limits")
    analyst.wait_for_url(f"{seeded_site}/cases/{CASE}/")
    add_claim(analyst, seeded_site, CASE, "The fix cancels transfers before reuse.", "Add a claim")
    analyst.goto(f"{seeded_site}/cases/{CASE}/claims/{CLAIM}/edit/")
    analyst.fill("#id_evidence-0-locator", "Technical analysis; section 3")
    save(analyst, "Narrower locator")
    analyst.wait_for_url(f"{seeded_site}/cases/{CASE}/**")
    analyst.goto(f"{seeded_site}/cases/{CASE}/")
    banner = analyst.locator(".review-banner").inner_text()
    assert f"3 changes since the reviewed revision {released}, awaiting review" in banner

    # reviewer B edits the title too
    reviewer_b = new_page(javascript=False)
    sign_in(reviewer_b, seeded_site, "reviewer-b")
    reviewer_b.goto(f"{seeded_site}/cases/{CASE}/edit/")
    title = record_document("case", CASE)["title"] + " (reviewed wording)"
    reviewer_b.fill("#id_case-title", title)
    save(reviewer_b, "Title wording")
    reviewer_b.wait_for_url(f"{seeded_site}/cases/{CASE}/")
    edited = latest("case", CASE)

    # the next release publishes nothing unreviewed: the case stays at its released revision
    # (a new source, reviewed, is what it publishes)
    create_source(User.objects.get(username="analyst"), "SRC-REVIEWED-NEW")
    approve(
        user=User.objects.get(username="reviewer-a"),
        record_kind="source",
        record_key="SRC-REVIEWED-NEW",
        revision_number=latest("source", "SRC-REVIEWED-NEW"),
    )
    second = release_publish(user=User.objects.get(username="reviewer"), notes="Nothing new")
    assert published(second.number) == released

    # reviewer A finds the case in the queue, with both authors, and asks for a change
    reviewer_a = new_page(javascript=False)
    sign_in(reviewer_a, seeded_site, "reviewer-a")
    reviewer_a.goto(f"{seeded_site}/review/")
    row = reviewer_a.locator(f"#review-case-{CASE.lower()}")
    assert "analyst, reviewer-b" in row.inner_text()
    assert "material" in row.inner_text()
    row.get_by_role("link", name=CASE).click()
    reviewer_a.wait_for_url(f"{seeded_site}/review/case/{CASE}/")
    changes = reviewer_a.locator("table.changes").inner_text()
    for text in ("Reproduced on one lab cluster only.", "section 3", "cancels transfers"):
        assert text in changes
    reviewer_a.screenshot(path=str(artifact("review-record.png")), full_page=True)
    form = reviewer_a.locator("form.request-changes")
    form.locator("select[name=path]").first.select_option("limits")
    form.locator("textarea[name=text]").first.fill("Name the cluster's GPUs.")
    form.get_by_role("button", name="Request changes").click()
    reviewer_a.wait_for_url(f"{seeded_site}/review/")
    assert ReviewComment.objects.get().path == "limits"

    # the analyst sees it at the limits field, and makes the change
    analyst.goto(f"{seeded_site}/cases/{CASE}/edit/")
    field = analyst.locator("#field-case-limits")
    assert "Name the cluster's GPUs." in field.inner_text()
    analyst.fill("#id_case-limits", "Reproduced on one lab cluster (2 x H200) only.")
    save(analyst, "Limits: the cluster")
    analyst.wait_for_url(f"{seeded_site}/cases/{CASE}/")
    assert not ReviewComment.objects.get().is_open
    fixed = latest("case", CASE)
    assert fixed > edited

    # reviewer B may not approve: the range holds their own change
    reviewer_b.goto(f"{seeded_site}/review/case/{CASE}/")
    assert "another reviewer must approve it" in reviewer_b.content()
    reviewer_b.get_by_role("button", name=f"Approve revision {fixed}").click()
    assert "approval.own_change" in reviewer_b.content()
    assert not Approval.objects.filter(record_key=CASE, revision_number=fixed).exists()

    # reviewer A, who wrote none of it, approves with a note
    reviewer_a.goto(f"{seeded_site}/review/case/{CASE}/")
    reviewer_a.fill("textarea[name=note]", "Checked against the PR and the write-up.")
    reviewer_a.get_by_role("button", name=f"Approve revision {fixed}").click()
    reviewer_a.wait_for_url(f"{seeded_site}/review/")
    assert "Nothing is waiting for review." in reviewer_a.content()
    approval = Approval.objects.get(record_key=CASE, revision_number=fixed)
    assert approval.reviewer.username == "reviewer-a"

    # the release after publishes exactly the approved revision
    third = release_publish(user=User.objects.get(username="reviewer"), notes="Reviewed edits")
    assert published(third.number) == fixed
    visitor = new_page(javascript=False)
    visitor.goto(f"{seeded_site}/cases/{CASE}/")
    assert "2 x H200" in visitor.content()
    assert visitor.locator(".review-banner").count() == 0
    for page in (analyst, reviewer_a, reviewer_b, visitor):
        assert page.csp_errors == []
