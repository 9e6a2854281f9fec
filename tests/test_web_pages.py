"""Every page for anonymous visitors, role-less users, viewers, analysts and reviewers."""

from __future__ import annotations

import pytest
from django.urls import reverse

from .support import (
    ALL_EDIT_PAGES,
    ANALYST_PAGES,
    REVIEW_PAGES,
    REVIEWER_PAGES,
    case_doc,
    edit_case,
    edit_form,
    make_user,
    page_forms,
    revision_count,
    revision_numbers,
    signed_in,
)

CASE = "CP22-003"
SOURCE = "SRC-SGLANG-KV-TRANSFER-SAFETY"
RULE = "RULE-CP22-002-RESPONSES-NOT-CP22-003"
METHOD = "diggingbeagle.assessment/1"
CLAIM = "CLM-CP22-003-A"


def reading_urls() -> list[str]:
    (case_revision,) = revision_numbers("case", CASE)
    (source_revision,) = revision_numbers("source", SOURCE)
    (rule_revision,) = revision_numbers("rule", RULE)
    (method_revision,) = revision_numbers("method", METHOD)
    return [
        "/cases/",
        "/cases/?status=ready&tag=rdma&a.setting=research_demonstration",
        f"/cases/{CASE}/",
        f"/cases/{CASE}/record.json",
        f"/cases/{CASE}/history/",
        f"/cases/{CASE}/revisions/{case_revision}/",
        f"/cases/{CASE}/revisions/{case_revision}/record.json",
        f"/cases/{CASE}/diff/{case_revision}/{case_revision}/",
        "/sources/",
        f"/sources/{SOURCE}/",
        f"/sources/{SOURCE}/history/",
        f"/sources/{SOURCE}/revisions/{source_revision}/",
        "/rules/",
        f"/rules/{RULE}/",
        f"/rules/{RULE}/history/",
        f"/rules/{RULE}/revisions/{rule_revision}/",
        "/methods/",
        f"/methods/{METHOD}/",
        f"/methods/{METHOD}/history/",
        f"/methods/{METHOD}/revisions/{method_revision}/",
    ]


def test_start_page_for_anonymous_visitors_offers_sign_in_and_no_data(client, seeded):
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert reverse("login") in html
    assert CASE not in html
    assert "Recent revisions" not in html
    response = client.get("/?q=RDMA")
    assert CASE not in response.content.decode()


@pytest.mark.parametrize("role", ["viewer", "analyst", "reviewer"])
def test_start_page_searches_and_lists_recent_revisions_for_readers(request, seeded, role):
    client = signed_in(request.getfixturevalue(role))
    assert "Recent revisions" in client.get("/").content.decode()
    html = client.get("/?q=RDMA").content.decode()
    assert f'href="/cases/{CASE}/"' in html


LISTS = {"/cases/", "/sources/", "/rules/", "/methods/"}


def assert_nothing_released_is_shown(client) -> None:
    """Before any release, the public sees empty lists and no record at all (a 404, the same
    answer as for a record that does not exist)."""
    for url in reading_urls():
        response = client.get(url)
        if url.split("?")[0] in LISTS:
            assert response.status_code == 200, url
            assert CASE not in response.content.decode(), url
        else:
            assert response.status_code == 404, url


def test_anonymous_visitors_see_nothing_unreleased_and_sign_in_to_edit(client, seeded):
    assert_nothing_released_is_shown(client)
    for url in ALL_EDIT_PAGES:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/?next="), url


def test_signed_in_users_without_a_role_read_the_released_view_and_edit_nothing(seeded, nobody):
    client = signed_in(nobody)
    assert_nothing_released_is_shown(client)
    for url in ALL_EDIT_PAGES:
        assert client.get(url).status_code == 403, url


@pytest.mark.parametrize("role", ["viewer", "analyst", "reviewer"])
def test_every_reading_page_renders_for_every_reader(request, seeded, role):
    client = signed_in(request.getfixturevalue(role))
    for url in reading_urls():
        response = client.get(url)
        assert response.status_code == 200, url


@pytest.mark.parametrize(
    ("role", "analyst_status", "reviewer_status"),
    [("viewer", 403, 403), ("analyst", 200, 403), ("reviewer", 200, 200)],
)
def test_editing_pages_follow_the_roles(request, seeded, role, analyst_status, reviewer_status):
    client = signed_in(request.getfixturevalue(role))
    for url in ANALYST_PAGES:
        assert client.get(url).status_code == analyst_status, url
    for url in REVIEWER_PAGES:
        assert client.get(url).status_code == reviewer_status, url


@pytest.mark.parametrize(
    ("role", "status"),
    [(None, 302), ("nobody", 403), ("viewer", 403), ("analyst", 200), ("reviewer", 200)],
)
def test_review_pages_follow_the_roles(request, seeded, role, status):
    edit_case(make_user("author", "analyst"), CASE, summary="Waits", limits="Waiting limits.")
    client = signed_in(request.getfixturevalue(role) if role else None)
    for url in REVIEW_PAGES:
        response = client.get(url)
        assert response.status_code == status, url
        if status == 302:
            assert response["Location"].startswith("/accounts/login/?next="), url
    html = client.get(f"/review/case/{CASE}/").content.decode() if status == 200 else ""
    assert ("/approve/" in html) == (role == "reviewer")


def test_viewers_see_no_edit_controls(seeded, viewer):
    client = signed_in(viewer)
    for url in [
        f"/cases/{CASE}/",
        "/cases/",
        f"/sources/{SOURCE}/",
        "/sources/",
        f"/rules/{RULE}/",
    ]:
        html = client.get(url).content.decode()
        assert "/edit/" not in html, url
        assert "/new/" not in html, url
        assert "/withdraw/" not in html, url
        assert [
            f for f in page_forms(html) if f.method == "post" and "logout" not in f.action
        ] == []
    (number,) = revision_numbers("case", CASE)
    html = client.get(f"/cases/{CASE}/revisions/{number}/").content.decode()
    assert "/revert/" not in html


def test_analysts_see_edit_controls_and_reviewers_the_rule_controls(seeded, analyst, reviewer):
    html = signed_in(analyst).get(f"/cases/{CASE}/").content.decode()
    for url in [f"/cases/{CASE}/edit/", f"/cases/{CASE}/claims/new/", "/attributions/edit/"]:
        assert url in html
    assert f"/rules/{RULE}/edit/" not in signed_in(analyst).get(f"/rules/{RULE}/").content.decode()
    assert f"/rules/{RULE}/edit/" in signed_in(reviewer).get(f"/rules/{RULE}/").content.decode()


def test_missing_records_are_404(seeded, viewer, analyst):
    client = signed_in(analyst)
    for url in [
        "/cases/NOPE/",
        "/cases/NOPE/record.json",
        "/cases/NOPE/history/",
        "/cases/NOPE/edit/",
        f"/cases/{CASE}/claims/CLM-NOPE/edit/",
        f"/cases/{CASE}/assessments/9/edit/",
        "/sources/SRC-NOPE/",
        "/rules/RULE-NOPE/",
        "/methods/nope/1/",
        f"/cases/{CASE}/revisions/999999/",
    ]:
        assert client.get(url).status_code == 404, url
    # a revision of another record is not a revision of this one
    (other,) = revision_numbers("case", "CP22-002")
    assert client.get(f"/cases/{CASE}/revisions/{other}/").status_code == 404


def _valid_post(client, url):
    """The page's own save form as an analyst or reviewer would submit it."""
    return edit_form(client.get(url).content.decode())


@pytest.mark.parametrize(
    ("role", "urls"),
    [("viewer", ALL_EDIT_PAGES), ("analyst", REVIEWER_PAGES), ("nobody", ALL_EDIT_PAGES)],
)
def test_denied_posts_change_nothing(request, seeded, reviewer, role, urls):
    """A user without the role posts a valid form (as a reviewer would send it): 403, and no
    revision is written."""
    reviewer_client = signed_in(reviewer)
    client = signed_in(request.getfixturevalue(role))
    before = revision_count()
    for url in urls:
        form = _valid_post(reviewer_client, url)
        data = form.data(summary="Should never be saved")
        response = client.post(form.action or url, data)
        assert response.status_code == 403, url
    (number,) = revision_numbers("case", CASE)
    response = client.post(
        f"/cases/{CASE}/revisions/{number}/revert/", {"summary": "no", "base_revision": number}
    )
    assert response.status_code == 403
    if role != "analyst":
        response = client.post(
            f"/cases/{CASE}/claims/{CLAIM}/move/",
            {"summary": "no", "direction": "down", "base_revision": number},
        )
        assert response.status_code == 403
    assert revision_count() == before


def test_anonymous_posts_change_nothing(client, seeded):
    before = revision_count()
    for url in ALL_EDIT_PAGES:
        response = client.post(url, {"summary": "no"})
        assert response.status_code == 302, url
    assert revision_count() == before


def test_record_json_is_the_canonical_document(seeded, viewer, seed_bundle):
    response = signed_in(viewer).get(f"/cases/{CASE}/record.json")
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == case_doc(seed_bundle, CASE)
    (number,) = revision_numbers("case", CASE)
    assert response["ETag"] == f'"{number}"'
